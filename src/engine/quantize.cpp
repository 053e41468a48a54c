#include "engine/quantize.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "common/cache_dir.h"
#include "common/cached_file.h"
#include "common/fatal.h"
#include "common/output_file.h"
#include "common/sha256.h"
#include "engine/gguf_file.h"
#include "engine/model.h"
#include "engine/system.h"
#include "errors.h"
#include "ggml.h"
#include "llama.h"

namespace hd::engine {
namespace {

struct QuantType {
  const char* name;  // llama-quantize's spelling; aliases resolve to `canonical`
  const char* canonical;
  llama_ftype ftype;
};

// llama-quantize's QUANT_OPTIONS at the pinned commit, minus the types that cannot be made
// without an importance matrix (IQ1_*, IQ2_*, IQ3_XXS, Q2_K_S), the ternary and MoE-only ones.
constexpr QuantType kTypes[] = {
    {"F32", "F32", LLAMA_FTYPE_ALL_F32},
    {"F16", "F16", LLAMA_FTYPE_MOSTLY_F16},
    {"BF16", "BF16", LLAMA_FTYPE_MOSTLY_BF16},
    {"Q8_0", "Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
    {"Q6_K", "Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
    {"Q5_K_M", "Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
    {"Q5_K_S", "Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S},
    {"Q5_K", "Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
    {"Q5_1", "Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
    {"Q5_0", "Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},
    {"Q4_K_M", "Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
    {"Q4_K_S", "Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S},
    {"Q4_K", "Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
    {"Q4_1", "Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
    {"Q4_0", "Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},
    {"IQ4_NL", "IQ4_NL", LLAMA_FTYPE_MOSTLY_IQ4_NL},
    {"IQ4_XS", "IQ4_XS", LLAMA_FTYPE_MOSTLY_IQ4_XS},
    {"Q3_K_L", "Q3_K_L", LLAMA_FTYPE_MOSTLY_Q3_K_L},
    {"Q3_K_M", "Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"Q3_K_S", "Q3_K_S", LLAMA_FTYPE_MOSTLY_Q3_K_S},
    {"Q3_K", "Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"Q2_K", "Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
};

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

const QuantType* find_type(const std::string& name) {
  const std::string key = upper(name);
  for (const QuantType& t : kTypes) {
    if (key == t.name) return &t;
  }
  return nullptr;
}

const QuantType& require_type(const std::string& name) {
  const QuantType* t = find_type(name);
  if (!t) {
    throw InputError("unknown quantization type '" + name + "' (valid: " + quantize_type_names() +
                     ")");
  }
  return *t;
}

}  // namespace

std::string quantize_type_names() {
  std::string out;
  for (const QuantType& t : kTypes) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

std::vector<std::string> stock_file_types() {
  std::vector<std::string> out;
  for (const QuantType& t : kTypes) {
    const std::string name = t.name;
    if (name == t.canonical && name != "F32" && name != "F16" && name != "BF16") out.push_back(name);
  }
  return out;
}

bool is_quant_type(const std::string& type) { return find_type(type) != nullptr; }

std::string canonical_quant_type(const std::string& type) { return require_type(type).canonical; }

namespace {

// The types a --tensor-type override may name: every type llama-quantize can make without an
// importance matrix, in ggml's spelling (upper case).
constexpr const char* kTensorTypes[] = {"F32",  "F16",  "BF16",   "Q8_0",  "Q6_K", "Q5_K",
                                        "Q5_1", "Q5_0", "Q4_K",   "Q4_1",  "Q4_0", "IQ4_NL",
                                        "IQ4_XS", "Q3_K", "Q2_K"};

[[maybe_unused]] ggml_type ggml_type_named(const std::string& name) {
  for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
    const char* n = ggml_type_name(static_cast<ggml_type>(i));
    if (n && upper(n) == name) return static_cast<ggml_type>(i);
  }
  throw InputError("ggml has no type " + name);  // not reached for kTensorTypes
}

void quantize_impl(const std::string& in, const std::string& out, const QuantType& t,
                   int n_threads, bool keep_output, OutputPolicy policy,
                   const std::vector<TensorTypeOverride>& overrides) {
  // A missing, foreign or truncated input, or one llama.cpp cannot read, gets its own clear
  // line before llama.cpp's quantizer fails on it less clearly.
  model_load(in);
  policy.inputs.push_back(in);
  // llama.cpp writes the whole file itself, under the temporary name; it is moved over `out`
  // only on success, so `out` is either as it was or complete.
  OutputFile file(out, policy);
  system_init();  // backends once, as llama-quantize does; and its chatter filtered
  fatal::set_activity("quantizing '" + in + "'");
  llama_model_quantize_params params = llama_model_quantize_default_params();
  params.nthread = n_threads;
  params.ftype = t.ftype;
  params.quantize_output_tensor = !keep_output;
#if HD_LLAMA_TENSOR_OVERRIDES
  // As tools/quantize builds them: pattern and type pairs, ended by a null pattern.
  std::vector<llama_model_tensor_override> tt;
  for (const TensorTypeOverride& o : overrides)
    tt.push_back({o.pattern.c_str(), ggml_type_named(canonical_tensor_type(o.type))});
  if (!tt.empty()) {
    tt.push_back({nullptr, GGML_TYPE_COUNT});
    params.tt_overrides = tt.data();
  }
#else
  if (!overrides.empty())
    throw RuntimeError("this llama.cpp has no per-tensor quantization types (tt_overrides)");
#endif
  const uint32_t rc = llama_model_quantize(in.c_str(), file.temporary().c_str(), &params);
  fatal::set_activity("");
  if (rc != 0) {
    const std::string why = last_llama_error();
    throw RuntimeError("llama.cpp could not quantize " + in + " to " + t.canonical +
                       (why.empty() ? "" : ": " + why));
  }
  file.commit();
}

}  // namespace

std::string tensor_type_names() {
  std::string out;
  for (const char* t : kTensorTypes) out += (out.empty() ? "" : ", ") + std::string(t);
  return out;
}

std::string canonical_tensor_type(const std::string& type) {
  const std::string key = upper(type);
  for (const char* t : kTensorTypes) {
    if (key == t) return t;
  }
  const QuantType* file_type = find_type(type);
  if (file_type && std::string(file_type->canonical).find("_K_") != std::string::npos) {
    const std::string c = file_type->canonical;
    throw InputError(c + " is a file type (a mix of tensor types); as a tensor type say " +
                     c.substr(0, c.size() - 2));
  }
  throw InputError("unknown tensor type '" + type + "' (valid: " + tensor_type_names() + ")");
}

void quantize_model(const std::string& in, const std::string& out, const std::string& type,
                    int n_threads, bool keep_output, OutputPolicy policy) {
  quantize_impl(in, out, require_type(type), n_threads, keep_output, std::move(policy), {});
}

void quantize_with_overrides(const std::string& in, const std::string& out,
                             const std::string& type,
                             const std::vector<TensorTypeOverride>& overrides, int n_threads,
                             OutputPolicy policy) {
  quantize_impl(in, out, require_type(type), n_threads, false, std::move(policy), overrides);
}

std::string quantized_cache_path(const std::string& src, const std::string& type) {
  const std::string canonical = canonical_quant_type(type);
  gguf_check(src);
  const std::string key = sha256_file(src).substr(0, 16);
  return (cache_dir() / "quantized" / (key + "-" + canonical + ".gguf")).string();
}

std::string ensure_quantized(const std::string& src, const std::string& type, int n_threads) {
  const std::string path = quantized_cache_path(src, type);
  return ensure_cached(path, [&](const std::string& tmp) {
    quantize_model(src, tmp, type, n_threads, false, OutputPolicy(true));
  });
}

void write_without_first_layers(const std::string& src, const std::string& dst, int n_layers) {
  gguf_check(src);
  system_init();
  std::vector<int32_t> prune;
  for (int32_t l = 0; l < n_layers; ++l) prune.push_back(l);
  prune.push_back(-1);
  llama_model_quantize_params params = llama_model_quantize_default_params();
  params.only_copy = true;
  params.prune_layers = prune.data();
  if (llama_model_quantize(src.c_str(), dst.c_str(), &params) != 0) {
    const std::string why = last_llama_error();
    throw RuntimeError("llama.cpp could not cut the first " + std::to_string(n_layers) +
                       " layers of " + src + (why.empty() ? "" : ": " + why));
  }
}

}  // namespace hd::engine
