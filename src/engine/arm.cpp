#include "engine/arm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/local_arm.h"
#include "engine/server_schedule.h"
#include "engine/system.h"
#include "engine/worker_arm.h"
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

int cache_ggml_type(const std::string& name) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char* n = ggml_type_name(static_cast<ggml_type>(t));
    if (n != nullptr && name == n) return t;
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
  if (s.device.empty()) throw InputError("the device must be cpu or a GPU name such as cuda0");
  if (!s.rpc.empty() && s.device != "cpu") {
    throw InputError("an arm on RPC servers (--rpc) runs on their devices: leave -dev at cpu");
  }
  for (const auto& e : s.rpc) {
    const auto colon = e.rfind(':');
    if (e.empty() || colon == std::string::npos || colon == 0 || colon + 1 == e.size() ||
        e.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      throw InputError("RPC server '" + e + "' is not host:port");
    }
  }
  if (n_ctx > m.n_ctx_train) {
    throw InputError("chunk " + std::to_string(n_ctx) + " is above the model's context of " +
                     std::to_string(m.n_ctx_train) + " tokens");
  }
  const auto tk = static_cast<ggml_type>(cache_ggml_type(s.cache_type_k));
  const auto tv = static_cast<ggml_type>(cache_ggml_type(s.cache_type_v));
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
  // llama_init_from_model forces flash attention off for Grok whatever -fa says, and then
  // refuses a quantized V cache with "requires flash_attn", which reads as if -fa were off.
  if (ggml_is_quantized(tv) && m.architecture == "grok") {
    throw InputError("llama.cpp turns flash attention off for the grok architecture, so a "
                     "quantized V cache (" + s.cache_type_v +
                     ") cannot be used with it: use an f16 V cache");
  }
  if (ggml_is_quantized(tv) && s.flash_attn == "off") {
    throw InputError("a quantized V cache (" + s.cache_type_v +
                     ") needs flash attention: use -fa on or auto, or an f16 V cache");
  }
  check_server_settings(s, n_ctx, m.n_ctx_train);
}

bool runs_in_worker(const ArmSettings& s) { return !s.rpc.empty() || !s.llama_build.empty(); }

Arm::Arm(std::shared_ptr<Model> model, ArmSettings settings, int n_ctx)
    : model_(std::move(model)), settings_(std::move(settings)) {
  check_settings(settings_, model_->info(), n_ctx);
  if (runs_in_worker(settings_)) {
    backend_ = std::make_unique<WorkerArm>(model_->info(), settings_, n_ctx);
  } else {
    backend_ = std::make_unique<LocalArm>(model_, settings_, n_ctx);
  }
}

Arm::~Arm() = default;

int Arm::n_threads() const { return backend_->n_threads(); }

bool Arm::splits_batches() const { return backend_->splits_batches(); }

nlohmann::json Arm::facts() const { return backend_->facts(); }

// A chunk's tokens from an empty cache (split: 0, or the pieces of a split pass).
static DecodeInput chunk_input(std::span<const int32_t> tokens, int first_output, int split = 0) {
  DecodeInput in{tokens, {}, static_cast<int32_t>(tokens.size()), first_output, 0, {}};
  in.split = split;
  return in;
}

void Arm::run_chunk(std::span<const int32_t> tokens, Hook* hook, std::vector<float>& logits,
                    int first_output) {
  decode(chunk_input(tokens, first_output), hook, logits);
}

std::span<const float> Arm::run_chunk_view(std::span<const int32_t> tokens, Hook* hook,
                                           int first_output) {
  return backend_->decode_view(chunk_input(tokens, first_output), hook);
}

bool Arm::splits_in_place(int ubatch) const { return backend_->splits_in_place(ubatch); }

void Arm::run_split(std::span<const int32_t> tokens, int ubatch, Hook* hook,
                    std::vector<float>& logits, int first_output) {
  if (!splits_in_place(ubatch)) {
    throw RuntimeError("'" + settings_.model + "' cannot be split into ubatches of " +
                       std::to_string(ubatch) + " in its own context");
  }
  decode(chunk_input(tokens, first_output, ubatch), hook, logits);
}

void Arm::run_pieces(std::span<const int32_t> tokens, int ubatch, Hook* hook, int first_output,
                     PieceFn piece) {
  if (ubatch > 0 && !splits_in_place(ubatch)) {
    throw RuntimeError("'" + settings_.model + "' cannot be split into ubatches of " +
                       std::to_string(ubatch) + " in its own context");
  }
  DecodeInput in = chunk_input(tokens, first_output, ubatch);
  in.on_piece = std::move(piece);
  backend_->decode_view(in, hook);
}

void Arm::release_context() { backend_->release_context(); }

void Arm::share_vocabulary() { backend_->share_vocabulary(); }

void Arm::run_step(int32_t token, int32_t pos, Hook* hook, std::vector<float>& logits) {
  if (pos < 1) throw RuntimeError("a decode step needs a prompt before it");
  decode({std::span<const int32_t>(&token, 1), {}, 1, 0, pos, {}}, hook, logits);
}

DecodeInput Arm::from_input(const std::string& start, std::span<const float> rows, int n_tokens,
                            int first_output) const {
  if (rows.size() != static_cast<size_t>(n_tokens) * static_cast<size_t>(model_->info().n_embd)) {
    throw RuntimeError("rows for '" + start + "' do not match the model's width");
  }
  return {{}, rows, n_tokens, first_output, 0, start};
}

void Arm::run_from(const std::string& start, std::span<const float> rows, int n_tokens,
                   Hook* hook, std::vector<float>& logits, int first_output) {
  decode(from_input(start, rows, n_tokens, first_output), hook, logits);
}

std::span<const float> Arm::run_from_view(const std::string& start, std::span<const float> rows,
                                          int n_tokens, Hook* hook, int first_output) {
  return backend_->decode_view(from_input(start, rows, n_tokens, first_output), hook);
}

// The ranges are checked by LocalArm, in this process or in the worker, where the context is.
void Arm::decode(const DecodeInput& in, Hook* hook, std::vector<float>& logits) {
  backend_->decode(in, hook, logits);
}

}  // namespace hd::engine
