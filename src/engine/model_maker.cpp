// Writes random-weight GGUF models that llama.cpp loads as if they were converted checkpoints.
//
// How the bytes are chosen (all of it is part of the "same seed => same file" contract):
// - Metadata: general.*, the architecture's hyperparameters, heterodyne.preset/seed, then every
//   tokenizer.* pair of a real vocabulary GGUF shipped in llama.cpp's models/ folder.
// - Weights: each tensor has its own splitmix64 stream, seeded by splitmix64(seed) XOR
//   FNV-1a(tensor name), so a tensor's values do not depend on which tensors precede it. One
//   64-bit draw gives one weight: the sum of its four 16-bit lanes (Irwin-Hall, n = 4) is a
//   bell-shaped variate bounded at +-3.46 sigma. Only integer arithmetic, one multiplication by a
//   per-tensor factor and one rounding to float are involved, so every platform gets the same
//   bits (no libm calls whose last bit may differ between C libraries).
// - Scales keep a pre-norm transformer's activations sane (see plan_tensors()).
// The presets live in model_presets, the tensors and their values in model_tensors; this file
// holds the weight types, the metadata and vocabulary, and the writing of the file.
#include "engine/model_maker.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <utility>

#include "build_info.h"
#include "common/output_file.h"
#include "engine/model_presets.h"
#include "engine/model_tensors.h"
#include "errors.h"
#include "ggml.h"
#include "gguf.h"
#include "llama.h"

namespace hd::engine {
namespace {

// ---------------------------------------------------------------------------------------------
// Weight types

struct WeightType {
  const char* name;
  ggml_type type;
  llama_ftype file_type;
};

// As llama.cpp's converters do, only matrices (2-D, or 3-D expert stacks) take this type; 1-D
// norm weights and MoE routers stay F32.
constexpr WeightType kWeightTypes[] = {
    {"f32", GGML_TYPE_F32, LLAMA_FTYPE_ALL_F32},
    {"f16", GGML_TYPE_F16, LLAMA_FTYPE_MOSTLY_F16},
    {"bf16", GGML_TYPE_BF16, LLAMA_FTYPE_MOSTLY_BF16},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const WeightType& find_weight_type(const std::string& name) {
  const std::string key = lower(name);
  for (const WeightType& t : kWeightTypes) {
    if (key == t.name) return t;
  }
  throw InputError("unknown weight type '" + name +
                   "' (valid: " + joined_names(model_weight_types()) + ")");
}

// ---------------------------------------------------------------------------------------------
// Owning handles for the C APIs

struct GgufFree {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlFree {
  void operator()(ggml_context* c) const { ggml_free(c); }
};
using GgufPtr = std::unique_ptr<gguf_context, GgufFree>;
using GgmlPtr = std::unique_ptr<ggml_context, GgmlFree>;

// ---------------------------------------------------------------------------------------------
// Vocabulary

std::string vocab_path(const Preset& p) {
  return std::string(hd::build::kLlamaSource) + "/models/" + p.vocab_file;
}

GgufPtr load_vocab(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw RuntimeError("vocabulary " + path + " not found in the llama.cpp tree");
  }
  // Metadata only: vocabulary GGUFs carry no tensors we need.
  gguf_init_params params{};
  params.no_alloc = true;
  params.ctx = nullptr;
  GgufPtr vocab(gguf_init_from_file(path.c_str(), params));
  if (!vocab) throw RuntimeError("cannot read vocabulary " + path);
  return vocab;
}

int64_t vocab_size(const gguf_context* vocab, const std::string& path) {
  const int64_t id = gguf_find_key(vocab, "tokenizer.ggml.tokens");
  if (id < 0) throw RuntimeError("vocabulary " + path + " has no tokenizer.ggml.tokens");
  return static_cast<int64_t>(gguf_get_arr_n(vocab, id));
}

// gguf_set_kv copies every pair, so first strip the vocabulary file's own general.* and
// architecture keys: only the tokenizer belongs in our model.
void copy_tokenizer(gguf_context* dst, gguf_context* vocab) {
  std::vector<std::string> foreign;
  for (int64_t i = 0; i < gguf_get_n_kv(vocab); ++i) {
    const std::string key = gguf_get_key(vocab, i);
    if (key.rfind("tokenizer.", 0) != 0) foreign.push_back(key);
  }
  for (const std::string& key : foreign) gguf_remove_key(vocab, key.c_str());
  gguf_set_kv(dst, vocab);
}

// A learned vocabulary, as llama.cpp's convert script writes a SentencePiece model.
void set_vocabulary(gguf_context* ctx, const SpmVocabulary& v) {
  const size_t n = v.tokens.size();
  if (n == 0 || v.scores.size() != n || v.types.size() != n) {
    throw InputError("vocabulary tokens, scores and types differ in length");
  }
  std::vector<const char*> texts;
  texts.reserve(n);
  for (const std::string& t : v.tokens) texts.push_back(t.c_str());
  gguf_set_val_str(ctx, "tokenizer.ggml.model", "llama");
  gguf_set_arr_str(ctx, "tokenizer.ggml.tokens", texts.data(), n);
  gguf_set_arr_data(ctx, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v.scores.data(), n);
  gguf_set_arr_data(ctx, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v.types.data(), n);
  gguf_set_val_u32(ctx, "tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk));
  gguf_set_val_u32(ctx, "tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos));
  gguf_set_val_u32(ctx, "tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos));
  gguf_set_val_bool(ctx, "tokenizer.ggml.add_bos_token", false);
  gguf_set_val_bool(ctx, "tokenizer.ggml.add_eos_token", false);
  gguf_set_val_bool(ctx, "tokenizer.ggml.add_space_prefix", false);
}

// ---------------------------------------------------------------------------------------------
// Metadata

// The keys only some families have: local attention (gemma3) and experts (qwen3moe), under the
// names convert_hf_to_gguf.py gives them.
void set_family_metadata(gguf_context* ctx, const Preset& p) {
  const std::string a = p.arch;
  if (p.n_swa > 0) {
    gguf_set_val_u32(ctx, (a + ".attention.sliding_window").c_str(), p.n_swa);
    gguf_set_val_u32(ctx, (a + ".attention.sliding_window_pattern").c_str(), p.swa_pattern);
    gguf_set_val_f32(ctx, (a + ".rope.freq_base_swa").c_str(), p.rope_base_swa);
  }
  if (p.n_expert > 0) {
    gguf_set_val_u32(ctx, (a + ".expert_count").c_str(), p.n_expert);
    gguf_set_val_u32(ctx, (a + ".expert_used_count").c_str(), p.n_expert_used);
    gguf_set_val_u32(ctx, (a + ".expert_feed_forward_length").c_str(), p.n_ff_exp);
  }
}

void set_metadata(gguf_context* ctx, const Preset& p, const WeightType& t, uint64_t seed,
                  int64_t n_vocab) {
  const std::string a = p.arch;
  gguf_set_val_str(ctx, "general.architecture", p.arch);
  const std::string name =
      std::string("heterodyne ") + p.name + " (random weights, seed " + std::to_string(seed) + ")";
  gguf_set_val_str(ctx, "general.name", name.c_str());
  gguf_set_val_u32(ctx, "general.file_type", static_cast<uint32_t>(t.file_type));

  gguf_set_val_u32(ctx, (a + ".vocab_size").c_str(), static_cast<uint32_t>(n_vocab));
  gguf_set_val_u32(ctx, (a + ".context_length").c_str(), p.n_ctx);
  gguf_set_val_u32(ctx, (a + ".embedding_length").c_str(), p.n_embd);
  gguf_set_val_u32(ctx, (a + ".block_count").c_str(), p.n_layer);
  gguf_set_val_u32(ctx, (a + ".feed_forward_length").c_str(), p.n_ff);
  gguf_set_val_u32(ctx, (a + ".attention.head_count").c_str(), p.n_head);
  gguf_set_val_u32(ctx, (a + ".attention.head_count_kv").c_str(), p.n_head_kv);
  // Explicit head size: qwen3-0.6b's (128) is not n_embd / n_head (64).
  gguf_set_val_u32(ctx, (a + ".attention.key_length").c_str(), p.head_dim);
  gguf_set_val_u32(ctx, (a + ".attention.value_length").c_str(), p.head_dim);
  gguf_set_val_f32(ctx, (a + ".attention.layer_norm_rms_epsilon").c_str(), p.rms_eps);
  gguf_set_val_f32(ctx, (a + ".rope.freq_base").c_str(), p.rope_base);
  gguf_set_val_u32(ctx, (a + ".rope.dimension_count").c_str(), p.head_dim);
  set_family_metadata(ctx, p);

  gguf_set_val_str(ctx, "heterodyne.preset", p.name);
  gguf_set_val_u64(ctx, "heterodyne.seed", seed);
}

// ---------------------------------------------------------------------------------------------
// Tensors

ggml_type storage_type(const TensorPlan& t, const WeightType& w) {
  return t.ne1 == 0 || t.keep_f32 ? GGML_TYPE_F32 : w.type;
}

// Registers every tensor's name, shape and type with the GGUF writer (gguf_add_tensor copies
// the descriptor; the data is streamed later). Returns the context that owns the descriptors.
GgmlPtr add_tensors(gguf_context* ctx, const std::vector<TensorPlan>& plan, const WeightType& w) {
  ggml_init_params params{};
  params.mem_size = (plan.size() + 1) * ggml_tensor_overhead();
  params.mem_buffer = nullptr;
  params.no_alloc = true;
  GgmlPtr meta(ggml_init(params));
  if (!meta) throw RuntimeError("ggml could not allocate tensor descriptors");
  for (const TensorPlan& t : plan) {
    ggml_tensor* tensor =
        t.ne1 == 0   ? ggml_new_tensor_1d(meta.get(), GGML_TYPE_F32, t.ne0)
        : t.ne2 == 0 ? ggml_new_tensor_2d(meta.get(), storage_type(t, w), t.ne0, t.ne1)
                     : ggml_new_tensor_3d(meta.get(), storage_type(t, w), t.ne0, t.ne1, t.ne2);
    ggml_set_name(tensor, t.name.c_str());
    gguf_add_tensor(ctx, tensor);
  }
  return meta;
}

// Converts a block of f32 values to the tensor's storage type and appends it to the file.
void write_block(OutputFile& out, const float* values, size_t n, ggml_type type) {
  const int64_t count = static_cast<int64_t>(n);
  if (type == GGML_TYPE_F16) {
    std::vector<ggml_fp16_t> half(n);
    ggml_fp32_to_fp16_row(values, half.data(), count);
    out.write(half.data(), n * sizeof(ggml_fp16_t));
  } else if (type == GGML_TYPE_BF16) {
    // The reference (scalar) conversion: the same rounding whatever the CPU supports.
    std::vector<ggml_bf16_t> half(n);
    ggml_fp32_to_bf16_row_ref(values, half.data(), count);
    out.write(half.data(), n * sizeof(ggml_bf16_t));
  } else {
    out.write(values, n * sizeof(float));
  }
}

void pad_to(OutputFile& out, size_t alignment) {
  static const std::vector<char> kZeros(256, 0);
  const size_t rem = out.written() % alignment;
  if (rem != 0) out.write(kZeros.data(), alignment - rem);  // GGUF alignment is <= 256
}

// Same layout gguf_write_to_file produces (metadata, then each tensor padded to the alignment),
// but with the tensor data generated block by block instead of held in memory.
void write_gguf(const gguf_context* ctx, const std::vector<TensorPlan>& plan, const WeightType& w,
                const ModelSpec& spec, const std::string& out_path, const OutputPolicy& policy) {
  OutputFile out(out_path, policy);
  std::vector<char> meta(gguf_get_meta_size(ctx));
  gguf_get_meta_data(ctx, meta.data());
  out.write(meta.data(), meta.size());

  const size_t alignment = gguf_get_alignment(ctx);
  constexpr size_t kBlock = size_t{1} << 20;
  std::vector<float> block(kBlock), noise;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorPlan& t = plan[i];
    if (out.written() - meta.size() != gguf_get_tensor_offset(ctx, static_cast<int64_t>(i))) {
      throw RuntimeError("internal error: GGUF data offset mismatch at " + t.name);
    }
    ValueStream values(t, spec.seed);
    const bool perturbed = !spec.perturb.empty() && t.name.find(spec.perturb) != std::string::npos;
    ValueStream draws(t, ~spec.seed);  // independent of `values`: another seed
    const size_t n = static_cast<size_t>(t.n_values());
    for (size_t done = 0; done < n; done += kBlock) {
      const size_t len = std::min(kBlock, n - done);
      values.next(block.data(), len);
      if (perturbed) {
        noise.resize(len);
        draws.next(noise.data(), len);
        for (size_t k = 0; k < len; ++k) {
          const double draw = noise[k] - (t.norm_weight ? t.centre : 0.0);  // its spread only
          block[k] += static_cast<float>(spec.perturb_scale * draw);
        }
      }
      write_block(out, block.data(), len, storage_type(t, w));
    }
    pad_to(out, alignment);
  }
  out.commit();
}

}  // namespace

std::vector<std::string> model_weight_types() {
  std::vector<std::string> names;
  for (const WeightType& t : kWeightTypes) names.emplace_back(t.name);
  return names;
}

namespace {

// The model's GGUF without its tensor data: metadata, vocabulary and tensor descriptors, and
// the plan of its values. What make_model writes, and what model_file_bytes measures.
struct Described {
  GgufPtr ctx;
  GgmlPtr descriptors;
  std::vector<TensorPlan> plan;
};

Described describe(const ModelSpec& spec, const Preset& preset, const WeightType& weights) {
  if ((preset.vocab_file == nullptr) != (spec.vocabulary != nullptr)) {
    throw InputError(std::string("preset '") + preset.name +
                     (preset.vocab_file ? "' has its own vocabulary" : "' needs a vocabulary"));
  }
  Described d;
  d.ctx.reset(gguf_init_empty());
  gguf_context* ctx = d.ctx.get();
  int64_t n_vocab = 0;
  if (spec.vocabulary) {
    n_vocab = static_cast<int64_t>(spec.vocabulary->tokens.size());
    set_metadata(ctx, preset, weights, spec.seed, n_vocab);
    set_vocabulary(ctx, *spec.vocabulary);
  } else {
    const std::string vpath = vocab_path(preset);
    GgufPtr vocab = load_vocab(vpath);
    n_vocab = vocab_size(vocab.get(), vpath);
    set_metadata(ctx, preset, weights, spec.seed, n_vocab);
    copy_tokenizer(ctx, vocab.get());
  }
  d.plan = plan_tensors(preset, n_vocab);
  if (!spec.perturb.empty()) {
    if (!(spec.perturb_scale > 0 && std::isfinite(spec.perturb_scale))) {
      throw InputError("--perturb-scale must be a positive number");
    }
    if (std::none_of(d.plan.begin(), d.plan.end(), [&](const TensorPlan& t) {
          return t.name.find(spec.perturb) != std::string::npos;
        })) {
      throw InputError("--perturb '" + spec.perturb + "': no tensor of preset '" + preset.name +
                       "' has a name containing it");
    }
    gguf_set_val_str(ctx, "heterodyne.perturb", spec.perturb.c_str());
    gguf_set_val_f64(ctx, "heterodyne.perturb_scale", spec.perturb_scale);
  }
  d.descriptors = add_tensors(ctx, d.plan, weights);
  return d;
}

}  // namespace

void make_model(const ModelSpec& spec, const std::string& out_path, const OutputPolicy& policy) {
  const Preset& preset = find_preset(spec.preset);
  const WeightType& weights = find_weight_type(spec.type);
  if (out_path.empty()) throw InputError("no output path given for the model");
  const Described d = describe(spec, preset, weights);
  write_gguf(d.ctx.get(), d.plan, weights, spec, out_path, policy);
}

uint64_t model_file_bytes(const ModelSpec& spec) {
  const Described d = describe(spec, find_preset(spec.preset), find_weight_type(spec.type));
  // write_gguf pads every tensor's data to the alignment, the last one too.
  const size_t alignment = gguf_get_alignment(d.ctx.get());
  const int64_t n = gguf_get_n_tensors(d.ctx.get());
  const size_t last = n == 0 ? 0 : gguf_get_tensor_size(d.ctx.get(), n - 1);
  const size_t data =
      n == 0 ? 0 : gguf_get_tensor_offset(d.ctx.get(), n - 1) + (last + alignment - 1) / alignment * alignment;
  return gguf_get_meta_size(d.ctx.get()) + data;
}

}  // namespace hd::engine
