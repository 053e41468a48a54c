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
#include "engine/model_maker.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <utility>

#include "build_info.h"
#include "common/output_file.h"
#include "common/splitmix.h"
#include "errors.h"
#include "ggml.h"
#include "gguf.h"
#include "llama.h"

namespace hd::engine {
namespace {

// ---------------------------------------------------------------------------------------------
// Presets

struct Preset {
  const char* name;
  const char* arch;        // general.architecture; also the prefix of its hyperparameter keys
  const char* vocab_file;  // a vocabulary GGUF in <llama.cpp>/models/; null: the spec gives one
  uint32_t n_layer;
  uint32_t n_embd;
  uint32_t n_head;
  uint32_t n_head_kv;
  uint32_t head_dim;
  uint32_t n_ff;
  uint32_t n_ctx;
  float rope_base;
  float rms_eps;
  bool qk_norm;      // qwen3 RMS-normalizes q and k per head (attn_q_norm / attn_k_norm)
  bool tied_output;  // no output.weight: llama.cpp reuses token_embd as the output head
};

// Every 2-D weight's row length (n_embd, n_ff, head_dim * n_head) is a multiple of 256 so that
// K-quants apply without llama.cpp falling back to other types.
constexpr Preset kPresets[] = {
    {"tiny-llama", "llama", "ggml-vocab-llama-spm.gguf", 4, 256, 4, 2, 64, 768, 2048, 10000.0f,
     1e-5f, false, false},
    {"tiny-qwen3", "qwen3", "ggml-vocab-qwen2.gguf", 4, 256, 4, 2, 64, 768, 2048, 1000000.0f, 1e-6f,
     true, false},
    {"demo-llama", "llama", nullptr, 4, 256, 4, 2, 64, 768, 2048, 10000.0f, 1e-5f, false, false},
    // Qwen3-0.6B's real shapes (config.json of Qwen/Qwen3-0.6B).
    {"qwen3-0.6b", "qwen3", "ggml-vocab-qwen2.gguf", 28, 1024, 16, 8, 128, 3072, 40960, 1000000.0f,
     1e-6f, true, true},
};

struct WeightType {
  const char* name;
  ggml_type type;
  llama_ftype file_type;
};

// As llama.cpp's converters do, only 2-D matrices take this type; 1-D norm weights stay F32.
constexpr WeightType kWeightTypes[] = {
    {"f32", GGML_TYPE_F32, LLAMA_FTYPE_ALL_F32},
    {"f16", GGML_TYPE_F16, LLAMA_FTYPE_MOSTLY_F16},
    {"bf16", GGML_TYPE_BF16, LLAMA_FTYPE_MOSTLY_BF16},
};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const Preset& find_preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) {
      return p;
    }
  }
  throw InputError("unknown model preset '" + name + "' (valid: " + join(model_presets()) + ")");
}

const WeightType& find_weight_type(const std::string& name) {
  const std::string key = lower(name);
  for (const WeightType& t : kWeightTypes) {
    if (key == t.name) return t;
  }
  throw InputError("unknown weight type '" + name + "' (valid: " + join(model_weight_types()) +
                   ")");
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

  gguf_set_val_str(ctx, "heterodyne.preset", p.name);
  gguf_set_val_u64(ctx, "heterodyne.seed", seed);
}

// ---------------------------------------------------------------------------------------------
// Tensors

struct TensorPlan {
  std::string name;
  int64_t ne0;       // row length = fan-in of a matrix
  int64_t ne1;       // rows; 0 for a 1-D tensor
  double sigma;      // standard deviation of the random part
  bool norm_weight;  // 1-D RMS-norm weight: 1 + noise, always F32
};

// Scales, for a pre-norm network whose every block reads an RMS-normalized residual:
// - token_embd: std e = 1 (untied), or 1/sqrt(n_embd) when it doubles as the output head, so
//   that logits have std ~1 either way;
// - input projections (q, k, v, gate, up): 1/sqrt(fan_in), giving unit-scale activations;
// - output projections (attn_output, ffn_down): e/sqrt(fan_in), so each block adds about as
//   much to the residual as the embedding itself: token identity and context both matter;
// - output head: 1/sqrt(n_embd), so logits of the normalized final residual have std ~1;
// - norm weights: 1 + N(0, 0.05), a little per-channel structure without changing scale.
std::vector<TensorPlan> plan_tensors(const Preset& p, int64_t n_vocab) {
  const int64_t n_embd = p.n_embd;
  const int64_t q_dim = int64_t{p.head_dim} * p.n_head;
  const int64_t kv_dim = int64_t{p.head_dim} * p.n_head_kv;
  const double e = p.tied_output ? 1.0 / std::sqrt(static_cast<double>(n_embd)) : 1.0;
  const auto in_std = [](int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); };
  constexpr double kNormNoise = 0.05;

  std::vector<TensorPlan> plan;
  plan.push_back({"token_embd.weight", n_embd, n_vocab, e, false});
  for (uint32_t il = 0; il < p.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    plan.push_back({b + "attn_norm.weight", n_embd, 0, kNormNoise, true});
    plan.push_back({b + "attn_q.weight", n_embd, q_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_k.weight", n_embd, kv_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_v.weight", n_embd, kv_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_output.weight", q_dim, n_embd, e * in_std(q_dim), false});
    if (p.qk_norm) {
      plan.push_back({b + "attn_q_norm.weight", p.head_dim, 0, kNormNoise, true});
      plan.push_back({b + "attn_k_norm.weight", p.head_dim, 0, kNormNoise, true});
    }
    plan.push_back({b + "ffn_norm.weight", n_embd, 0, kNormNoise, true});
    plan.push_back({b + "ffn_gate.weight", n_embd, p.n_ff, in_std(n_embd), false});
    plan.push_back({b + "ffn_up.weight", n_embd, p.n_ff, in_std(n_embd), false});
    plan.push_back({b + "ffn_down.weight", p.n_ff, n_embd, e * in_std(p.n_ff), false});
  }
  plan.push_back({"output_norm.weight", n_embd, 0, kNormNoise, true});
  if (!p.tied_output) plan.push_back({"output.weight", n_embd, n_vocab, in_std(n_embd), false});
  return plan;
}

ggml_type storage_type(const TensorPlan& t, const WeightType& w) {
  return t.ne1 == 0 ? GGML_TYPE_F32 : w.type;
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
    ggml_tensor* tensor = t.ne1 == 0
                              ? ggml_new_tensor_1d(meta.get(), GGML_TYPE_F32, t.ne0)
                              : ggml_new_tensor_2d(meta.get(), storage_type(t, w), t.ne0, t.ne1);
    ggml_set_name(tensor, t.name.c_str());
    gguf_add_tensor(ctx, tensor);
  }
  return meta;
}

// ---------------------------------------------------------------------------------------------
// Deterministic values

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Streams one tensor's values in order, a block at a time (no tensor is held whole).
class ValueStream {
 public:
  ValueStream(const TensorPlan& t, uint64_t seed) : norm_weight_(t.norm_weight) {
    uint64_t s = seed;
    state_ = splitmix64(s) ^ fnv1a64(t.name);
    // The centred lane sum has variance (65536^2 - 1) / 3; scale it to the wanted std.
    scale_ = t.sigma * std::sqrt(3.0 / (65536.0 * 65536.0 - 1.0));
  }

  void next(float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const double z = static_cast<double>(centred_lane_sum(splitmix64(state_)));
      // std::fma rounds once by definition, so no compiler contraction can change the bits.
      out[i] = static_cast<float>(norm_weight_ ? std::fma(z, scale_, 1.0) : z * scale_);
    }
  }

 private:
  static int64_t centred_lane_sum(uint64_t r) {
    int64_t sum = 0;
    for (int lane = 0; lane < 4; ++lane) sum += static_cast<int64_t>((r >> (16 * lane)) & 0xffff);
    return sum - 2 * 65535;  // each lane's mean is 65535 / 2
  }

  bool norm_weight_;
  uint64_t state_;
  double scale_;
};

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
                uint64_t seed, const std::string& out_path, const OutputPolicy& policy) {
  OutputFile out(out_path, policy);
  std::vector<char> meta(gguf_get_meta_size(ctx));
  gguf_get_meta_data(ctx, meta.data());
  out.write(meta.data(), meta.size());

  const size_t alignment = gguf_get_alignment(ctx);
  constexpr size_t kBlock = size_t{1} << 20;
  std::vector<float> block(kBlock);
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorPlan& t = plan[i];
    if (out.written() - meta.size() != gguf_get_tensor_offset(ctx, static_cast<int64_t>(i))) {
      throw RuntimeError("internal error: GGUF data offset mismatch at " + t.name);
    }
    ValueStream values(t, seed);
    const size_t n = static_cast<size_t>(t.ne0 * std::max<int64_t>(t.ne1, 1));
    for (size_t done = 0; done < n; done += kBlock) {
      const size_t len = std::min(kBlock, n - done);
      values.next(block.data(), len);
      write_block(out, block.data(), len, storage_type(t, w));
    }
    pad_to(out, alignment);
  }
  out.commit();
}

}  // namespace

std::vector<std::string> model_presets() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

std::vector<std::string> model_weight_types() {
  std::vector<std::string> names;
  for (const WeightType& t : kWeightTypes) names.emplace_back(t.name);
  return names;
}

void make_model(const ModelSpec& spec, const std::string& out_path, const OutputPolicy& policy) {
  const Preset& preset = find_preset(spec.preset);
  const WeightType& weights = find_weight_type(spec.type);
  if (out_path.empty()) throw InputError("no output path given for the model");

  if ((preset.vocab_file == nullptr) != (spec.vocabulary != nullptr)) {
    throw InputError(std::string("preset '") + preset.name +
                     (preset.vocab_file ? "' has its own vocabulary" : "' needs a vocabulary"));
  }
  GgufPtr ctx(gguf_init_empty());
  int64_t n_vocab = 0;
  if (spec.vocabulary) {
    n_vocab = static_cast<int64_t>(spec.vocabulary->tokens.size());
    set_metadata(ctx.get(), preset, weights, spec.seed, n_vocab);
    set_vocabulary(ctx.get(), *spec.vocabulary);
  } else {
    const std::string vpath = vocab_path(preset);
    GgufPtr vocab = load_vocab(vpath);
    n_vocab = vocab_size(vocab.get(), vpath);
    set_metadata(ctx.get(), preset, weights, spec.seed, n_vocab);
    copy_tokenizer(ctx.get(), vocab.get());
  }

  const std::vector<TensorPlan> plan = plan_tensors(preset, n_vocab);
  const GgmlPtr descriptors = add_tensors(ctx.get(), plan, weights);
  write_gguf(ctx.get(), plan, weights, spec.seed, out_path, policy);
}

}  // namespace hd::engine
