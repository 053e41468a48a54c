#include "engine/arm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/system.h"
#include "errors.h"
#include "ggml.h"
#include "llama.h"

namespace hd::engine {

const std::vector<std::string>& cache_types() {
  // common/arg.cpp's kv_cache_types at the pinned commit.
  static const std::vector<std::string> types = {"f32",  "f16",    "bf16", "q8_0", "q4_0",
                                                 "q4_1", "iq4_nl", "q5_0", "q5_1"};
  return types;
}

static ggml_type cache_type(const std::string& name) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char* n = ggml_type_name(static_cast<ggml_type>(t));
    if (n != nullptr && name == n) return static_cast<ggml_type>(t);
  }
  return GGML_TYPE_COUNT;
}

static std::string list(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

void check_settings(const ArmSettings& s, const ModelInfo& m, int n_ctx) {
  for (const auto* t : {&s.cache_type_k, &s.cache_type_v}) {
    const auto& ok = cache_types();
    if (std::find(ok.begin(), ok.end(), *t) == ok.end()) {
      throw InputError("unknown KV cache type '" + *t + "' (valid: " + list(ok) + ")");
    }
  }
  if (s.flash_attn != "on" && s.flash_attn != "off" && s.flash_attn != "auto") {
    throw InputError("flash attention must be on, off or auto, not '" + s.flash_attn + "'");
  }
  if (s.n_ubatch < 1)
    throw InputError("ubatch must be at least 1, not " + std::to_string(s.n_ubatch));
  if (s.n_threads < 0 || s.n_threads > 512) {
    throw InputError("thread count must be between 1 and 512, not " + std::to_string(s.n_threads));
  }
  if (n_ctx > m.n_ctx_train) {
    throw InputError("chunk " + std::to_string(n_ctx) + " is above the model's context of " +
                     std::to_string(m.n_ctx_train) + " tokens");
  }
  const ggml_type tk = cache_type(s.cache_type_k);
  const ggml_type tv = cache_type(s.cache_type_v);
  const int64_t bk = ggml_blck_size(tk);
  const int64_t bv = ggml_blck_size(tv);
  // llama.cpp does not check this with flash attention off and silently computes garbage.
  if (m.head_dim_k % bk != 0) {
    throw InputError("K cache type " + s.cache_type_k + " has blocks of " + std::to_string(bk) +
                     " values, which do not divide the head dimension " +
                     std::to_string(m.head_dim_k) + " of '" + m.path + "'");
  }
  if (m.head_dim_v % bv != 0) {
    throw InputError("V cache type " + s.cache_type_v + " has blocks of " + std::to_string(bv) +
                     " values, which do not divide the head dimension " +
                     std::to_string(m.head_dim_v) + " of '" + m.path + "'");
  }
  if (ggml_is_quantized(tv) && s.flash_attn == "off") {
    throw InputError("a quantized V cache (" + s.cache_type_v +
                     ") needs flash attention: use -fa on or auto, or an f16 V cache");
  }
}

Arm::Arm(std::shared_ptr<Model> model, ArmSettings settings, int n_ctx)
    : model_(std::move(model)), settings_(std::move(settings)), n_ctx_(n_ctx) {
  check_settings(settings_, model_->info(), n_ctx_);
  n_threads_ = settings_.n_threads > 0 ? settings_.n_threads : default_threads();
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx_);
  cp.n_batch = static_cast<uint32_t>(n_ctx_);
  cp.n_ubatch = static_cast<uint32_t>(std::min(settings_.n_ubatch, n_ctx_));
  cp.n_seq_max = 1;
  cp.n_threads = n_threads_;
  cp.n_threads_batch = n_threads_;
  cp.type_k = cache_type(settings_.cache_type_k);
  cp.type_v = cache_type(settings_.cache_type_v);
  cp.flash_attn_type = settings_.flash_attn == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : settings_.flash_attn == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                       : LLAMA_FLASH_ATTN_TYPE_AUTO;
  cp.cb_eval = &Arm::eval_callback;
  cp.cb_eval_user_data = this;
  cp.no_perf = true;
  ctx_ = llama_init_from_model(model_->handle(), cp);
  if (ctx_ == nullptr) {
    const std::string why = last_llama_error();
    throw InputError("llama.cpp refused the settings for '" + settings_.model + "'" +
                     (why.empty() ? "" : ": " + why));
  }
}

Arm::~Arm() {
  if (ctx_ != nullptr) llama_free(ctx_);
}

bool Arm::eval_callback(ggml_tensor* t, bool ask, void* self) {
  Hook* hook = static_cast<Arm*>(self)->hook_;
  if (hook == nullptr) return !ask;  // want nothing; keep computing
  return hook->on_eval(t, ask);
}

void Arm::run_chunk(std::span<const int32_t> tokens, Hook* hook, std::vector<float>& logits,
                    int first_output) {
  decode(&tokens, nullptr, static_cast<int32_t>(tokens.size()), hook, logits, first_output);
}

void Arm::run_step(int32_t token, int32_t pos, Hook* hook, std::vector<float>& logits) {
  if (pos < 1) throw RuntimeError("a decode step needs a prompt before it");
  const std::span<const int32_t> one(&token, 1);
  decode(&one, nullptr, 1, hook, logits, 0, pos);
}

void Arm::run_residual(std::span<const float> rows, int n_tokens, Hook* hook,
                       std::vector<float>& logits, int first_output) {
  if (rows.size() != static_cast<size_t>(n_tokens) * static_cast<size_t>(model_->info().n_embd)) {
    throw RuntimeError("residual rows do not match the model's width");
  }
  decode(nullptr, &rows, n_tokens, hook, logits, first_output);
}

void Arm::decode(const std::span<const int32_t>* tokens, const std::span<const float>* rows,
                 int32_t n, Hook* hook, std::vector<float>& logits, int first_output,
                 int32_t pos0) {
  if (n < 1 || pos0 < 0 || pos0 + n > n_ctx_)
    throw RuntimeError("chunk length out of range for this arm");
  if (first_output < 0 || first_output >= n)
    throw RuntimeError("first output position out of range");
  if (pos0 == 0) llama_memory_clear(llama_get_memory(ctx_), true);
  const int32_t width = rows != nullptr ? model_->info().n_embd : 0;
  llama_batch batch = llama_batch_init(n, width, 1);
  if (rows != nullptr) std::memcpy(batch.embd, rows->data(), rows->size() * sizeof(float));
  for (int32_t i = 0; i < n; ++i) {
    if (tokens != nullptr) batch.token[i] = (*tokens)[static_cast<size_t>(i)];
    batch.pos[i] = pos0 + i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = i >= first_output ? 1 : 0;
  }
  batch.n_tokens = n;
  hook_ = hook != nullptr && !hook->empty() ? hook : nullptr;
  if (hook_ != nullptr) hook_->begin_decode(n, first_output, model_->info().n_layer);
  const int32_t rc = llama_decode(ctx_, batch);
  llama_batch_free(batch);
  Hook* used = hook_;
  hook_ = nullptr;
  if (used != nullptr) used->end_decode();  // a hook failure is the more precise message
  if (rc != 0) {
    const std::string why = last_llama_error();
    throw RuntimeError("llama_decode failed (" + std::to_string(rc) + ")" +
                       (why.empty() ? "" : ": " + why));
  }
  const size_t n_vocab = static_cast<size_t>(model_->info().n_vocab);
  logits.resize(static_cast<size_t>(n - first_output) * n_vocab);
  for (int32_t i = first_output; i < n; ++i) {
    const float* row = llama_get_logits_ith(ctx_, i);
    if (row == nullptr)
      throw RuntimeError("llama.cpp returned no logits for position " + std::to_string(i));
    std::memcpy(logits.data() + static_cast<size_t>(i - first_output) * n_vocab, row,
                n_vocab * sizeof(float));
    // A NaN or inf logit makes every number downstream meaningless (KL would print as nan):
    // refuse it here, where the position is still known.
    for (size_t k = 0; k < n_vocab; ++k) {
      if (!std::isfinite(row[k])) {
        throw RuntimeError("'" + settings_.model + "' produced a non-finite logit (" +
                           std::to_string(row[k]) + ") at position " + std::to_string(pos0 + i) +
                           ": its weights may be corrupt, or a setting overflows");
      }
    }
  }
}

}  // namespace hd::engine
