// An arm: a model plus every runtime setting that can change its numbers. It evaluates one
// chunk of tokens at a time from an empty KV cache, with an optional hook on the graph.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/arm_settings.h"
#include "engine/hook.h"
#include "engine/model.h"

namespace hd::engine {

// Whether an arm runs in a worker process: another llama.cpp build, or RPC (ggml-rpc aborts
// the process when a server goes away; the worker's death is then reported, not ours).
bool runs_in_worker(const ArmSettings& s);

// The KV cache types llama.cpp accepts for -ctk/-ctv.
const std::vector<std::string>& cache_types();

// Refuses settings llama.cpp would reject or, worse, silently run wrongly (a K block that does
// not divide the head dim with flash attention off returns garbage). Throws InputError.
void check_settings(const ArmSettings& s, const ModelInfo& model, int n_ctx);

class ArmBackend;

// One decode's input: tokens or residual rows entering layer 0.
struct DecodeInput {
  std::span<const int32_t> tokens;  // empty when rows are given
  std::span<const float> rows;      // [n][n_embd] or empty
  int32_t n = 0;
  int first_output = 0;
  int32_t pos0 = 0;  // > 0: continue the sequence in the KV cache (a decode step)
  // Non-empty: the graph node the rows are the value of; the pass computes only what follows
  // it (llama_set_graph_start, scripts/llama-graph-start.patch). Empty: rows enter layer 0.
  std::string start;
  // > 0: the tokens in pieces of `split`, one llama_decode each, in this arm's own context: the
  // ubatches a context of -ub split cuts the batch into, bit for bit (tests/test_split_in_place),
  // without a second context's compute and output buffers (ArmBackend::splits_in_place).
  int32_t split = 0;
  // Set: each piece's logits (rows from position `pos` on, [rows][n_vocab]) handed over where
  // the arm holds them, before the next piece's decode overwrites them, and none kept (a pass
  // compared piece by piece needs no copy of its own: run/session_lean.cpp). A backend without
  // pieces of its own hands the whole pass as one.
  using PieceFn = std::function<void(int32_t pos, std::span<const float> logits)>;
  PieceFn on_piece = nullptr;
};

class Arm {
 public:
  // n_ctx is the chunk length: every chunk is one batch evaluated from an empty cache (plus
  // any single-token steps that follow it, see run_step).
  Arm(std::shared_ptr<Model> model, ArmSettings settings, int n_ctx);
  ~Arm();
  Arm(const Arm&) = delete;
  Arm& operator=(const Arm&) = delete;

  const ModelInfo& model_info() const { return model_->info(); }
  const Model& model() const { return *model_; }
  const ArmSettings& settings() const { return settings_; }
  int n_threads() const;
  // Whether another ubatch gives another split of the batch: false for a model without a KV
  // cache (dream, llada), which llama.cpp encodes in one piece. Such an arm has no floor.
  bool splits_batches() const;
  // Where it ran, for provenance: the process ("in-process" or the worker's build facts) and
  // the devices that held the weights.
  nlohmann::json facts() const;

  // Evaluates `tokens` (positions 0..n-1, one sequence) and writes the raw logits of positions
  // first_output..n-1 into `logits` ([n - first_output][n_vocab]); asking for fewer logits
  // spares the output head the other rows, as llama-perplexity does. The hook, if any, sees
  // this decode only. `logits` keeps its allocation between calls.
  void run_chunk(std::span<const int32_t> tokens, Hook* hook, std::vector<float>& logits,
                 int first_output = 0);

  // run_chunk without the copy: the logits where the arm holds them ([n - first_output][n_vocab]),
  // valid until its next decode. A 128k vocabulary at 512 positions is 250 MiB a copy.
  std::span<const float> run_chunk_view(std::span<const int32_t> tokens, Hook* hook,
                                        int first_output = 0);

  // run_from without the copy, as run_chunk_view; empty where a hook stopped the graph.
  std::span<const float> run_from_view(const std::string& start, std::span<const float> rows,
                                       int n_tokens, Hook* hook, int first_output = 0);

  // Whether run_split can split a chunk into ubatches of `ubatch` in this arm's context: a plain
  // arm of this process whose ubatch holds them. Elsewhere the floor makes an arm of its own.
  bool splits_in_place(int ubatch) const;
  // run_chunk as an arm of -ub `ubatch` (otherwise these settings) runs it.
  void run_split(std::span<const int32_t> tokens, int ubatch, Hook* hook,
                 std::vector<float>& logits, int first_output = 0);
  // run_split (ubatch 0: run_chunk) with its logits handed to `piece` one llama_decode at a
  // time, where the arm holds them (DecodeInput::on_piece): no copy of the pass is made.
  using PieceFn = DecodeInput::PieceFn;
  void run_pieces(std::span<const int32_t> tokens, int ubatch, Hook* hook, int first_output,
                  PieceFn piece);

  // Frees the arm's llama.cpp context (its KV cache, compute and output buffers) until its next
  // decode makes it again, the weights kept: a run that needs one context at a time (a 3B
  // model's is 570 MiB at chunks of 512). The same bits either way (tests/test_lean_pass.cpp).
  void release_context();
  // Model::share_vocabulary with this arm's weights where they are in this process.
  void share_vocabulary();

  // One more token at position `pos`, continuing the sequence the previous call left in the
  // KV cache (no clearing): a single-token decode step, which runs other kernels than a
  // prompt's batch (matrix-vector products, one query row in attention). `logits` gets the
  // token's [n_vocab] raw logits.
  void run_step(int32_t token, int32_t pos, Hook* hook, std::vector<float>& logits);

  // The pass from graph node `start` on: `rows` ([n_tokens][n_embd]) are that node's value and
  // nothing before it is computed. Throws RuntimeError where the graph cannot start there, or
  // this llama.cpp lacks llama_set_graph_start. A hook that stops (Hook::stop_after) leaves
  // `logits` empty.
  void run_from(const std::string& start, std::span<const float> rows, int n_tokens, Hook* hook,
                std::vector<float>& logits, int first_output = 0);

 private:
  void decode(const DecodeInput& in, Hook* hook, std::vector<float>& logits);
  // run_from's input, its rows checked against the model's width.
  DecodeInput from_input(const std::string& start, std::span<const float> rows, int n_tokens,
                         int first_output) const;

  std::shared_ptr<Model> model_;  // this process's copy: tokenization and shape facts
  ArmSettings settings_;
  std::unique_ptr<ArmBackend> backend_;
};

// How an arm evaluates: in this process (local_arm.h) or in a worker (worker_arm.h).
class ArmBackend {
 public:
  virtual ~ArmBackend() = default;
  // Runs one decode, filling `logits` ([n - first_output][n_vocab]) and the hook's captures.
  virtual void decode(const DecodeInput& in, Hook* hook, std::vector<float>& logits) = 0;
  // The same decode, its logits where the backend holds them until its next decode (a copy in
  // view_ unless the backend has them in order, local_arm.h).
  virtual std::span<const float> decode_view(const DecodeInput& in, Hook* hook) {
    decode(in, hook, view_);
    if (in.on_piece) in.on_piece(in.first_output, view_);
    return view_;
  }
  virtual int n_threads() const = 0;
  virtual nlohmann::json facts() const = 0;
  // false for a model without a KV cache, whose batch is always one ubatch (local_arm.h).
  virtual bool splits_batches() const { return true; }
  // Whether a decode with DecodeInput::split = `ubatch` runs here (local_arm.h).
  virtual bool splits_in_place(int /*ubatch*/) const { return false; }
  // Arm::release_context; nothing where the context is not this process's.
  virtual void release_context() {}
  virtual void share_vocabulary() {}

 protected:
  std::vector<float> view_;  // decode_view's copy, where the backend's logits are not in order
};

}  // namespace hd::engine
