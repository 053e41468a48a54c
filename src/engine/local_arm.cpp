#include "engine/local_arm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/fatal.h"
#include "engine/logit_rows.h"
#include "engine/system.h"
#include "engine/threads.h"
#include "errors.h"
#include "ggml.h"
#include "llama.h"

namespace hd::engine {

namespace {
// llama_model_is_hybrid came after some builds a worker may link (node-llama-cpp@3.14.0 lacks
// it): found by argument-dependent lookup where it exists, false where it does not.
template <class M>
auto model_is_hybrid(const M* m, int) -> decltype(llama_model_is_hybrid(m)) {
  return llama_model_is_hybrid(m);
}
template <class M>
bool model_is_hybrid(const M*, long) {
  return false;
}
}  // namespace

Placement placement_of(const ArmSettings& s) {
  if (!s.rpc.empty()) return rpc_placement(s.rpc, s.n_gpu_layers);
  return device_placement(s.device, s.n_gpu_layers);
}

LocalArm::LocalArm(std::shared_ptr<Model> model, const ArmSettings& settings, int n_ctx)
    : model_(std::move(model)), settings_(settings), n_ctx_(n_ctx) {
  weights_ = load_weights(model_->info().path, placement_of(settings_));
  n_threads_ = settings_.n_threads > 0 ? settings_.n_threads : default_threads();
  open_context();
  if (composer_ != nullptr) {
    if (const std::string why = server_refusal(); !why.empty()) {
      llama_free(ctx_);
      ctx_ = nullptr;
      throw InputError(why);
    }
  }
  // A model without a KV cache (the diffusion models dream, llada, rnd1) is encoded: llama.cpp
  // asserts (aborts) unless the whole batch is one ubatch.
  if (!splits_batches() && n_ubatch_ < n_ctx_) {
    llama_free(ctx_);
    ctx_ = nullptr;
    throw InputError(no_split_reason(settings_.model) + ": its ubatch must hold the whole chunk (-ub " +
                     std::to_string(n_ctx_) + " or more)");
  }
}

// The context the settings ask for, made at construction and again after release_context.
void LocalArm::open_context() {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx_);
  cp.n_batch = static_cast<uint32_t>(n_ctx_);
  cp.n_ubatch = static_cast<uint32_t>(std::min(settings_.n_ubatch, n_ctx_));
  cp.n_seq_max = 1;
  if (is_server_arm(settings_)) {  // slots as llama-server holds them (server_schedule.h)
    const int cells = server_cells_per_slot(settings_, n_ctx_);
    // A neighbour generates no further than the model's positions go (learned position tables).
    if (composer_ == nullptr) {
      composer_ =
          std::make_unique<ServerComposer>(settings_, std::min(cells, model_->info().n_ctx_train));
    }
    cp.n_seq_max = static_cast<uint32_t>(settings_.slots);
    cp.n_ctx = static_cast<uint32_t>(cells * settings_.slots);
    cp.kv_unified = settings_.kv_unified == "on";
    cp.n_batch = settings_.n_batch > 0 ? static_cast<uint32_t>(settings_.n_batch) : cp.n_ctx;
    cp.n_ubatch = std::min(static_cast<uint32_t>(settings_.n_ubatch), cp.n_batch);
  }
  n_ubatch_ = static_cast<int>(cp.n_ubatch);
  cp.n_threads = n_threads_;
  cp.n_threads_batch = n_threads_;
  cp.type_k = static_cast<ggml_type>(cache_ggml_type(settings_.cache_type_k));
  cp.type_v = static_cast<ggml_type>(cache_ggml_type(settings_.cache_type_v));
  cp.flash_attn_type = settings_.flash_attn == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : settings_.flash_attn == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                       : LLAMA_FLASH_ATTN_TYPE_AUTO;
  cp.cb_eval = &LocalArm::eval_callback;
  cp.cb_eval_user_data = this;
  cp.no_perf = true;
  fatal::set_activity("preparing a context for '" + settings_.model + "'");
  {
    const FlashAttnLogWatch watch;
    ctx_ = llama_init_from_model(weights_->handle(), cp);
    // -fa on and off are what ran unless llama.cpp said otherwise (Grok); auto is what it chose,
    // and stays unknown ("") where it said nothing.
    flash_attn_resolved_ = !watch.logged().empty()       ? watch.logged()
                           : settings_.flash_attn != "auto" ? settings_.flash_attn
                                                          : "";
  }
  fatal::set_activity("");
  if (ctx_ == nullptr) {
    const std::string why = last_llama_error();
    // Made once already (release_context): the settings were fine; memory, most likely, is not.
    if (opened_) {
      throw RuntimeError("llama.cpp could not make the context of '" + settings_.model + "' again" +
                         (why.empty() ? "" : ": " + why));
    }
    throw InputError("llama.cpp refused the settings for '" + settings_.model + "'" +
                     (why.empty() ? "" : ": " + why));
  }
  opened_ = true;
  has_memory_ = llama_get_memory(ctx_) != nullptr;
}

void LocalArm::release_context() {
  if (composer_ != nullptr || ctx_ == nullptr) return;  // a server arm's cache is its state
  llama_free(ctx_);
  ctx_ = nullptr;
  view_ = {};  // a copy of rows out of order, as large as the logits
}

// Why this model cannot be a server arm with these settings ("" where it can).
std::string LocalArm::server_refusal() const {
  if (!splits_batches()) return no_split_reason(settings_.model) + ": it has no slots to share a batch with";
  // llama-server runs a sliding-window model with swa_full off, where its cache cannot shift.
  if (settings_.cache_reuse > 0 && llama_model_n_swa(weights_->handle()) > 0) {
    return "'" + settings_.model + "' attends through a sliding window, and llama-server (which "
           "keeps only the window's cells) turns --cache-reuse off for it: drop --cache-reuse";
  }
  if (settings_.cache_reuse > 0 && !llama_memory_can_shift(llama_get_memory(ctx_))) {
    return "'" + settings_.model + "' cannot shift its KV cache (llama_memory_can_shift), so "
           "llama-server turns --cache-reuse off for it: drop --cache-reuse";
  }
  const llama_model* handle = weights_->handle();
  const bool recurrent = llama_model_is_recurrent(handle) || model_is_hybrid(handle, 0);
  if (recurrent && (settings_.cache_reuse > 0 || settings_.prompt_cache == "hit")) {
    return "'" + settings_.model + "' keeps a recurrent state, which cannot drop the end of a "
           "sequence (llama_memory_seq_rm): a prompt-cache hit or --cache-reuse cannot be taken "
           "there (--prompt-cache prefix can)";
  }
  // A recurrent or hybrid memory splits a batch of several sequences into equal parts of each
  // (split_equal, non-sequential with unified KV): a split server_schedule.h does not mirror,
  // so the hook could not tell the measured rows apart.
  if (settings_.slots > 1 && recurrent) {
    return "'" + settings_.model + "' keeps a recurrent state, whose batches llama.cpp splits per "
           "sequence: server arms of more than one slot are not supported for it yet "
           "(docs/server.md)";
  }
  return "";
}

std::string no_split_reason(const std::string& model) {
  return "'" + model + "' keeps no KV cache, so llama.cpp evaluates a batch in one piece";
}

bool LocalArm::splits_batches() const { return has_memory_; }

LocalArm::~LocalArm() {
  if (ctx_ != nullptr) llama_free(ctx_);
}

bool LocalArm::eval_callback(ggml_tensor* t, bool ask, void* self) {
  Hook* hook = static_cast<LocalArm*>(self)->hook_;
  if (hook == nullptr) return !ask;  // want nothing; keep computing
  return hook->on_eval(t, ask);
}

void LocalArm::decode(const DecodeInput& in, Hook* hook, std::vector<float>& logits) {
  if (composer_ != nullptr) {
    check_input(in);
    decode_server(in, hook, logits);
    return;
  }
  decode_into(in, hook, &logits);
}

std::span<const float> LocalArm::decode_view(const DecodeInput& in, Hook* hook) {
  if (composer_ != nullptr || (in.split > 0 && !in.on_piece))
    return ArmBackend::decode_view(in, hook);
  return decode_into(in, hook, nullptr);
}

void LocalArm::check_input(const DecodeInput& in) const {
  const int32_t n = in.n, pos0 = in.pos0;
  if (n < 1 || pos0 < 0 || pos0 + n > n_ctx_)
    throw RuntimeError("chunk length out of range for this arm");
  if (in.first_output < 0 || in.first_output >= n)
    throw RuntimeError("first output position out of range");
  if (composer_ != nullptr) return;
  if (pos0 > 0 && !splits_batches()) {
    throw InputError(no_split_reason(settings_.model) + ": it cannot continue a sequence (decode steps)");
  }
  const bool from_rows = !in.rows.empty();
  const size_t width = from_rows ? static_cast<size_t>(model_->info().n_embd) : 0;
  if (from_rows ? in.rows.size() != static_cast<size_t>(n) * width
                : in.tokens.size() != static_cast<size_t>(n)) {
    throw RuntimeError("decode input does not match its length");
  }
  if (!in.start.empty() && !from_rows) throw RuntimeError("a pass from a graph node needs its rows");
#ifndef LLAMA_HAS_GRAPH_START
  if (!in.start.empty()) {
    throw RuntimeError("this llama.cpp has no llama_set_graph_start (scripts/llama-graph-start.patch "
                       "is not applied to it): a pass cannot start at '" + in.start + "'");
  }
#endif
}

// One piece's rows (positions pos..pos + n_out - 1, the decode's rows from pos - lo on) handed
// over where llama.cpp wrote them, or from view_ where they are not in order there.
void LocalArm::hand_piece(int32_t pos, int32_t n_rows, int32_t lo, const float* first_row,
                          bool in_order, const DecodeInput::PieceFn& fn) {
  const int32_t n_out = lo + n_rows - pos;
  if (!in_order) {
    fn(pos, gather(pos - lo, n_out));
    return;
  }
  fn(pos, {first_row, static_cast<size_t>(n_out) * static_cast<size_t>(model_->info().n_vocab)});
}

// The decode's logits copied into `*copy`, or with a null `copy` checked where llama.cpp wrote
// them (one piece): a view of its output buffer, or of view_ where its rows are not in order.
std::span<const float> LocalArm::decode_into(const DecodeInput& in, Hook* hook,
                                             std::vector<float>* copy) {
  check_input(in);
  if (ctx_ == nullptr) {  // released since the last decode: a new, empty cache
    if (in.pos0 > 0) throw RuntimeError("a decode step needs the KV cache its prompt left");
    open_context();
  }
  const int32_t n = in.n, first_output = in.first_output;
  // A split pass is the tokens in pieces of `split`, one llama_decode each: the ubatches a context
  // of -ub split cuts the batch into, here in this context (Arm::run_split checked that it can).
  const int32_t piece = in.split > 0 ? in.split : n;
  // A view is of one piece's output: llama.cpp's buffer holds the last decode's rows alone.
  const bool by_piece = copy == nullptr && in.on_piece;
  if (copy == nullptr && !by_piece && piece < n)
    throw RuntimeError("a split pass's logits are copied or handed over by piece, not viewed");
  const size_t n_vocab = static_cast<size_t>(model_->info().n_vocab);
  const size_t n_values = static_cast<size_t>(n - first_output) * n_vocab;
  if (copy != nullptr) copy->resize(n_values);  // before the hook is set: nothing to reset
  if (in.pos0 == 0) llama_memory_clear(llama_get_memory(ctx_), true);
  int32_t rc = 0;
  const float* first_row = nullptr;
  bool in_order = true;
  std::string failure;
  hook_ = hook != nullptr && !hook->empty() ? hook : nullptr;
  try {
    if (hook_ != nullptr) hook_->set_layout({});
    if (hook_ != nullptr) hook_->begin_decode(n, first_output, model_->info().n_layer);
    for (int32_t lo = 0; lo < n; lo += piece) {
      const int32_t hi = std::min(n, lo + piece);
      rc = decode_piece(in, lo, hi);
      // A failed callback ends its graph early with rc 0: the logits are not computed.
      if (rc != 0 || (hook_ != nullptr && hook_->failed())) break;
      // A hook that stops the graph (Hook::stop_after) stops every piece's: no logits.
      if (hook_ != nullptr && !hook_->stop_point().empty()) continue;
      // By piece, offsets count from this piece's first output row.
      const int32_t base = by_piece ? std::max(lo, first_output) : first_output;
      if (by_piece) {
        first_row = nullptr;
        in_order = true;
      }
      for (int32_t i = std::max(lo, first_output); i < hi; ++i) {
        const float* row = llama_get_logits_ith(ctx_, i - lo);
        if (row == nullptr)
          throw RuntimeError("llama.cpp returned no logits for position " + std::to_string(i));
        const size_t at = static_cast<size_t>(i - base) * n_vocab;
        if (copy != nullptr) {
          copy_logits(row, copy->data() + at, n_vocab, settings_.model, in.pos0 + i);
          continue;
        }
        check_logits(row, n_vocab, settings_.model, in.pos0 + i);
        if (i == base) first_row = row;
        // Offsets, not pointers: a row out of order may lie outside the first row's buffer.
        in_order = in_order && reinterpret_cast<uintptr_t>(row) ==
                                   reinterpret_cast<uintptr_t>(first_row) + at * sizeof(float);
      }
      if (by_piece && hi > base) hand_piece(base, hi - lo, lo, first_row, in_order, in.on_piece);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (by_piece) {  // nothing to return: every piece was handed over
    return end_decode(in, rc, failure, nullptr, 0, nullptr);
  }
  const float* rows = copy != nullptr ? copy->data() : in_order ? first_row : nullptr;
  return end_decode(in, rc, failure, rows, n_values, copy);
}

// After the pieces: the hook's verdict first (its failure is the more precise message: anything
// else left its rows short), then llama.cpp's or the logits' failure; the logits' span (none
// where the graph stopped; copied into view_ where they are not in order at `rows`).
std::span<const float> LocalArm::end_decode(const DecodeInput& in, int32_t rc,
                                            const std::string& failure, const float* rows,
                                            size_t n_values, std::vector<float>* copy) {
  Hook* used = hook_;
  hook_ = nullptr;
  const bool hook_failed = used != nullptr && used->failed();
  if (!failure.empty() && !hook_failed) throw RuntimeError(failure);
  if (rc != 0 && !hook_failed) {
    const std::string why = last_llama_error();
    throw RuntimeError("llama_decode failed (" + std::to_string(rc) + ")" +
                       (why.empty() ? "" : ": " + why));
  }
  if (used != nullptr) used->end_decode();  // throws where the hook failed
  if (used != nullptr && !used->stop_point().empty()) {  // the graph stopped
    if (copy != nullptr) copy->clear();
    return {};
  }
  if (rows != nullptr || n_values == 0) return {rows, n_values};  // 0: handed over by piece
  return gather(in.first_output, in.n - in.first_output);
}

std::span<const float> LocalArm::gather(int32_t first, int32_t count) {
  const size_t n_vocab = static_cast<size_t>(model_->info().n_vocab);
  view_.resize(static_cast<size_t>(count) * n_vocab);
  for (int32_t r = 0; r < count; ++r) {
    std::memcpy(view_.data() + static_cast<size_t>(r) * n_vocab,
                llama_get_logits_ith(ctx_, first + r), n_vocab * sizeof(float));
  }
  return view_;
}

// Tokens (or rows) lo..hi-1 of the input in one llama_decode: its return code.
int32_t LocalArm::decode_piece(const DecodeInput& in, int32_t lo, int32_t hi) {
  const bool from_rows = !in.rows.empty();
  const int32_t width = from_rows ? model_->info().n_embd : 0;
  const int32_t m = hi - lo;
  llama_batch batch = llama_batch_init(m, width, 1);
  if (from_rows) {
    std::memcpy(batch.embd, in.rows.data() + static_cast<size_t>(lo) * static_cast<size_t>(width),
                static_cast<size_t>(m) * static_cast<size_t>(width) * sizeof(float));
  }
  for (int32_t i = 0; i < m; ++i) {
    if (!from_rows) batch.token[i] = in.tokens[static_cast<size_t>(lo + i)];
    batch.pos[i] = in.pos0 + lo + i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = lo + i >= in.first_output ? 1 : 0;
  }
  batch.n_tokens = m;
#ifdef LLAMA_HAS_GRAPH_START
  llama_set_graph_start(ctx_, in.start.empty() ? nullptr : in.start.c_str());
#endif
  fatal::set_activity("running '" + settings_.model + "'");
  const int32_t rc = llama_decode(ctx_, batch);
  fatal::set_activity("");
#ifdef LLAMA_HAS_GRAPH_START
  llama_set_graph_start(ctx_, nullptr);
#endif
  llama_batch_free(batch);
  return rc;
}

bool LocalArm::splits_in_place(int ubatch) const {
  return composer_ == nullptr && splits_batches() && ubatch >= 1 && ubatch <= n_ubatch_;
}

nlohmann::json LocalArm::facts() const {
  nlohmann::json f = {{"process", "in-process"},
                      {"placement", placement_facts(weights_->placement())}};
  if (!flash_attn_resolved_.empty()) f["flash_attn"] = flash_attn_resolved_;
  return f;
}

}  // namespace hd::engine
