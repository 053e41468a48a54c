// The demo model: a small llama heterodyne trains itself, so that `make demo` shows real
// quantization effects on a fresh machine with no model and no network.
//
// Pipeline: gather the corpus -> learn a vocabulary -> write a random F32 model of the
// demo-llama shape with that vocabulary -> measure held-out loss -> train with llama.cpp's
// optimizer -> measure again -> greedy continuation of a code prompt. The result lives in the
// cache under a key of everything that determines it (corpus hash, seed, every setting, the
// llama.cpp commit) and is reused while that key holds.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hd::demo {

struct DemoSettings {
  uint64_t seed = 1;  // initial weights and training windows
  // Measured on 2 cores (docs/demo.md): 1500 steps train in 2.2 to 2.7 minutes; a peak rate of
  // 2e-4 beat 3e-4 and 5e-4, which spike, since every step sees one window of 256 tokens.
  int steps = 1500;
  int vocab_size = 1024;
  int n_ctx = 256;  // training window, and the model's context_length
  float lr = 2e-4f;
  int n_threads = 0;                      // 0: default_threads()
  std::vector<std::string> corpus_roots;  // empty: default_corpus_roots()
  std::string prompt = "static int ";     // greedy continuation shown after training
  int continuation_tokens = 48;
  int eval_windows = 32;  // held-out windows of n_ctx tokens for the loss
};

struct HeldOutLoss {
  double nats_per_byte = 0;
  double nats_per_token = 0;
  int64_t tokens = 0;  // predicted tokens
  int64_t bytes = 0;   // their bytes
};

struct DemoModel {
  std::string model_path;     // F32 GGUF in the cache
  std::string held_out_path;  // text never trained on
  std::string key;            // cache key (hex)
  bool reused = false;
  std::string corpus_sha256;
  int train_files = 0, held_out_files = 0;
  int64_t train_bytes = 0, held_out_bytes = 0, train_tokens = 0;
  HeldOutLoss before, after;
  double train_seconds = 0;
  std::string prompt, continuation;
};

// Makes (or reuses) the demo model; `progress` receives one line per stage and per report.
DemoModel ensure_demo_model(const DemoSettings& settings,
                            const std::function<void(const std::string&)>& progress);

// Mean negative log-likelihood of the next token over up to max_windows non-overlapping windows
// of n_ctx tokens spread evenly over the text, per token and per byte of the predicted tokens'
// text.
HeldOutLoss held_out_loss(const std::string& model_path, const std::string& text, int n_ctx,
                          int max_windows, int n_threads);

// Greedy decoding: the text of the n_tokens most likely tokens after `prompt`.
std::string greedy_continuation(const std::string& model_path, const std::string& prompt,
                                int n_tokens, int n_ctx, int n_threads);

}  // namespace hd::demo
