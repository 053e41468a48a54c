// A server arm's decode: the measured tokens fed among the other slots' as llama-server's
// update loop composes its batches (server_schedule.h), one llama_decode per batch, the hook
// told which graph rows are the measured sequence's.
#include <algorithm>
#include <functional>
#include <cstring>

#include "common/fatal.h"
#include "engine/local_arm.h"
#include "engine/logit_rows.h"
#include "engine/system.h"
#include "errors.h"
#include "llama.h"

namespace hd::engine {

namespace {

// llama-server decodes a batch longer than n_batch in views of n_batch (update_slots).
std::vector<ServerBatch> in_views(std::vector<ServerBatch> plan, int n_batch) {
  if (n_batch <= 0) return plan;
  std::vector<ServerBatch> out;
  for (auto& b : plan) {
    for (size_t i = 0; i < b.size(); i += static_cast<size_t>(n_batch)) {
      out.emplace_back(b.begin() + static_cast<ptrdiff_t>(i),
                       b.begin() + static_cast<ptrdiff_t>(std::min(b.size(), i + static_cast<size_t>(n_batch))));
    }
  }
  return out;
}

// Cells [p0, p1) of the slot dropped from the cache, as the server does before a reuse.
void drop(llama_memory_t mem, llama_seq_id slot, llama_pos p0, llama_pos p1) {
  if (!llama_memory_seq_rm(mem, slot, p0, p1))
    throw RuntimeError("llama.cpp could not drop positions of a sequence from its cache "
                       "(llama_memory_seq_rm)");
}

}  // namespace

// The decodes of one chunk (or step), in phases: what the prompt cache held decides them.
// miss: the whole prompt. prefix: an earlier request's prompt was the chunk's first half, kept;
// the rest is decoded on it. hit (the same prompt again): an earlier request decoded it all; the
// slot keeps all but its last token (seq_rm) and decodes that one again, for its logits.
// cache-reuse J: an earlier request was the chunk's first quarter, J other tokens, then its second
// quarter; the server keeps the first quarter, drops the J tokens' cells (seq_rm) and shifts the
// second quarter back into place (seq_add: a RoPE K-shift at the next decode), then decodes the
// second half. The first half's logits come from a clean decode of it, which is then forgotten.
std::vector<LocalArm::Phase> LocalArm::plan_phases(const DecodeInput& in) {
  const int32_t n = in.n, first_output = in.first_output, pos0 = in.pos0;
  const llama_seq_id slot = settings_.slot;
  llama_memory_t mem = llama_get_memory(ctx_);
  std::vector<Phase> phases(1);
  if (pos0 == 0) composer_->start(in.tokens, phases[0].batches);
  const bool whole = pos0 == 0;
  if (whole && settings_.cache_reuse > 0 && n >= 4) {
    const int32_t q = n / 4, h = n / 2, junk = settings_.cache_reuse;
    composer_->feed(in.tokens, 0, h, 0, first_output, phases[0].batches);
    std::vector<int32_t> earlier;  // the J other tokens (the text read from its middle), then the quarter
    for (int32_t i = 0; i < junk; ++i) earlier.push_back(in.tokens[static_cast<size_t>((n / 2 + i) % n)]);
    earlier.insert(earlier.end(), in.tokens.begin() + q, in.tokens.begin() + h);
    Phase again{{}, [mem, slot, q] { drop(mem, slot, q, -1); }};
    composer_->feed(earlier, 0, static_cast<int32_t>(earlier.size()), q, first_output, again.batches, 0);
    Phase shifted{{}, [mem, slot, q, h, junk] {
                    drop(mem, slot, q, q + junk);
                    llama_memory_seq_add(mem, slot, q + junk, h + junk, -junk);
                  }};
    composer_->feed(in.tokens, h, n, 0, first_output, shifted.batches);
    phases.push_back(std::move(again));
    phases.push_back(std::move(shifted));
  } else if (whole && settings_.prompt_cache == "hit" && n > 1) {
    composer_->feed(in.tokens, 0, n, 0, first_output, phases[0].batches, n - 1);
    Phase last{{}, [mem, slot, n] { drop(mem, slot, n - 1, -1); }};
    composer_->feed(in.tokens, n - 1, n, 0, first_output, last.batches);
    phases.push_back(std::move(last));
  } else {
    const int32_t kept = whole && settings_.prompt_cache == "prefix" ? n / 2 : 0;
    composer_->feed(in.tokens, 0, kept, pos0, first_output, phases[0].batches);
    phases.emplace_back();
    composer_->feed(in.tokens, kept, n, pos0, first_output, phases.back().batches);
  }
  return phases;
}

void LocalArm::decode_server(const DecodeInput& in, Hook* hook, std::vector<float>& logits) {
  if (!in.rows.empty() || !in.start.empty()) {
    throw InputError("a server arm ('" + settings_.model + "' with slots or neighbours) runs from "
                     "tokens: its other slots have no rows to start a pass from");
  }
  const int32_t n = in.n, first_output = in.first_output;
  if (in.tokens.size() != static_cast<size_t>(n)) throw RuntimeError("decode input does not match its length");
  std::vector<Phase> phases = plan_phases(in);
  for (auto& p : phases) p.batches = in_views(std::move(p.batches), settings_.n_batch);
  if (in.pos0 == 0) llama_memory_clear(llama_get_memory(ctx_), true);

  const auto n_ubatch = static_cast<int>(llama_n_ubatch(ctx_));
  const bool stream_per_slot = settings_.slots > 1 && settings_.kv_unified == "off";
  std::vector<Hook::UbatchRows> layout;
  for (const auto& phase : phases) {
    for (const auto& b : phase.batches) {
      for (const auto& u : ubatch_split(b, n_ubatch, stream_per_slot)) {
        Hook::UbatchRows rows;
        for (const int32_t i : u) {
          const BatchToken& t = b[static_cast<size_t>(i)];
          rows.rows.push_back(t.measured);
          if (t.output) rows.outputs.push_back(t.measured);
        }
        layout.push_back(std::move(rows));
      }
    }
  }
  hook_ = hook != nullptr && !hook->empty() ? hook : nullptr;
  if (hook_ != nullptr && !hook_->stop_point().empty()) {
    hook_ = nullptr;
    throw InputError("a server arm's pass runs to the logits: it cannot stop at a graph point");
  }
  if (hook_ != nullptr) {
    hook_->set_layout(std::move(layout));
    hook_->begin_decode(n, first_output, model_->info().n_layer);
  }
  logits.resize(static_cast<size_t>(n - first_output) * static_cast<size_t>(model_->info().n_vocab));
  std::string failure;
  try {
    for (const auto& phase : phases) {
      if (phase.before) phase.before();
      for (const auto& b : phase.batches) run_server_batch(b, first_output, logits);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  Hook* used = hook_;
  hook_ = nullptr;
  // The hook's own failure is the more precise message; any other (a decode, a non-finite logit)
  // left the hook's rows short, which is not what went wrong.
  if (!failure.empty() && (used == nullptr || !used->failed())) throw RuntimeError(failure);
  if (used != nullptr) used->end_decode();
}

void LocalArm::run_server_batch(const ServerBatch& b, int first_output, std::vector<float>& logits) {
  const auto size = static_cast<int32_t>(b.size());
  llama_batch batch = llama_batch_init(size, 0, 1);
  for (int32_t i = 0; i < size; ++i) {
    const BatchToken& t = b[static_cast<size_t>(i)];
    batch.token[i] = t.token;
    batch.pos[i] = t.pos;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = t.seq;
    batch.logits[i] = t.output ? 1 : 0;
  }
  batch.n_tokens = size;
  fatal::set_activity("running '" + settings_.model + "' among " + std::to_string(settings_.slots) + " slots");
  const int32_t rc = llama_decode(ctx_, batch);
  fatal::set_activity("");
  llama_batch_free(batch);
  if (rc != 0) {
    const std::string why = last_llama_error();
    throw RuntimeError("llama_decode failed (" + std::to_string(rc) + ") for a server batch of " +
                       std::to_string(size) + " tokens" + (why.empty() ? "" : ": " + why));
  }
  const size_t n_vocab = static_cast<size_t>(model_->info().n_vocab);
  for (int32_t i = 0; i < size; ++i) {
    const BatchToken& t = b[static_cast<size_t>(i)];
    if (t.measured < first_output) continue;  // a neighbour's (-1) or an unscored position
    const float* row = llama_get_logits_ith(ctx_, i);
    if (row == nullptr) throw RuntimeError("llama.cpp returned no logits for position " + std::to_string(t.measured));
    copy_logits(row, logits.data() + static_cast<size_t>(t.measured - first_output) * n_vocab,
                n_vocab, settings_.model, t.pos);
  }
}

}  // namespace hd::engine
