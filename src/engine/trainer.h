// Trains an F32 GGUF in-process with llama.cpp's own optimizer (llama_opt_init/llama_opt_epoch,
// AdamW), as llama.cpp's finetune example does, and writes the result.
//
// Each optimizer step sees one window of n_ctx tokens taken at a random offset of the training
// tokens (a seeded generator: the same settings give the same windows in the same order).
// llama.cpp at this commit does not train token_embd (llama_context::opt_init leaves it out,
// "FIXME"): the embeddings keep their initial values and every other weight learns.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace hd::engine {

struct TrainSettings {
  int n_ctx = 256;        // tokens per window (= per optimizer step)
  int steps = 600;        // optimizer steps
  float lr = 2e-4f;       // AdamW peak learning rate
  float lr_min = 2e-5f;   // cosine decay ends here
  int warmup = 100;       // linear warm-up steps
  float beta2 = 0.999f;   // AdamW second-moment decay
  int n_threads = 0;      // 0: default_threads()
  uint64_t seed = 1;      // window offsets
  int report_every = 25;  // steps between progress reports
};

struct TrainProgress {
  int step = 0;  // steps done
  int steps = 0;
  double loss = 0;     // mean training loss (nats per token) of the steps since the last report
  double seconds = 0;  // since training started
};

// Trains the model at init_path (F32 weights) on `tokens` and writes out_path atomically: the
// init file's metadata (llama_model_save_to_file would drop keys such as general.file_type),
// its context_length set to the window the model was trained on, plus the string pairs in
// `meta`; the trained tensors. Throws InputError for settings that cannot work (too few tokens
// for one window, steps < 1) and RuntimeError when llama.cpp refuses the model.
void train_model(const std::string& init_path, std::span<const int32_t> tokens,
                 const TrainSettings& settings, const std::string& out_path,
                 const std::vector<std::pair<std::string, std::string>>& meta,
                 const std::function<void(const TrainProgress&)>& on_progress);

}  // namespace hd::engine
