// An arm: a model plus every runtime setting that can change its numbers. It evaluates one
// chunk of tokens at a time from an empty KV cache, with an optional hook on the graph.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/hook.h"
#include "engine/model.h"

struct llama_context;

namespace hd::engine {

// The settings, spelled as llama.cpp's flags spell them (-ctk -ctv -fa -ub -t).
struct ArmSettings {
  std::string model;
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  std::string flash_attn = "auto";  // on | off | auto
  int n_ubatch = 512;
  int n_threads = 0;  // 0: default_threads()
};

// The KV cache types llama.cpp accepts for -ctk/-ctv.
const std::vector<std::string>& cache_types();

// Refuses settings llama.cpp would reject or, worse, silently run wrongly (a K block that does
// not divide the head dim with flash attention off returns garbage). Throws InputError.
void check_settings(const ArmSettings& s, const ModelInfo& model, int n_ctx);

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
  int n_threads() const { return n_threads_; }

  // Evaluates `tokens` (positions 0..n-1, one sequence) and writes the raw logits of positions
  // first_output..n-1 into `logits` ([n - first_output][n_vocab]); asking for fewer logits
  // spares the output head the other rows, as llama-perplexity does. The hook, if any, sees
  // this decode only. `logits` keeps its allocation between calls.
  void run_chunk(std::span<const int32_t> tokens, Hook* hook, std::vector<float>& logits,
                 int first_output = 0);

  // One more token at position `pos`, continuing the sequence the previous call left in the
  // KV cache (no clearing): a single-token decode step, which runs other kernels than a
  // prompt's batch (matrix-vector products, one query row in attention). `logits` gets the
  // token's [n_vocab] raw logits.
  void run_step(int32_t token, int32_t pos, Hook* hook, std::vector<float>& logits);

  // The same, starting from residual rows ([n_tokens][n_embd]) instead of tokens: they enter
  // as layer 0's input through llama_batch.embd. On a model cut by ensure_tail_model this runs
  // the original's later layers on a given residual.
  void run_residual(std::span<const float> rows, int n_tokens, Hook* hook,
                    std::vector<float>& logits, int first_output = 0);

 private:
  static bool eval_callback(struct ggml_tensor* t, bool ask, void* self);
  void decode(const std::span<const int32_t>* tokens, const std::span<const float>* rows, int32_t n,
              Hook* hook, std::vector<float>& logits, int first_output, int32_t pos0 = 0);

  std::shared_ptr<Model> model_;
  ArmSettings settings_;
  int n_ctx_ = 0;
  int n_threads_ = 0;
  llama_context* ctx_ = nullptr;
  Hook* hook_ = nullptr;
};

}  // namespace hd::engine
