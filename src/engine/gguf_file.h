// Checks a GGUF file before llama.cpp sees it, so that a missing, foreign, truncated or
// unsupported file gets one clear line instead of a crash or a vague "failed to load".
#pragma once
#include <cstdint>
#include <string>

namespace hd::engine {

struct GgufSummary {
  std::string architecture;
  std::string name;
  uint64_t file_size = 0;
  int64_t n_tensors = 0;
  uint64_t n_params = 0;    // elements over every tensor
  std::string weight_type;  // the ggml type holding the most bytes, e.g. "q4_K", "f16"
  // The shape, from "<arch>.*" metadata as llama.cpp reads it (a per-layer head count array
  // gives its first entry, as llama_model_n_head does); 0 where a key is absent.
  int n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;
  int n_ctx_train = 0;
};

// Throws InputError naming the file and what is wrong with it.
GgufSummary gguf_check(const std::string& path);

}  // namespace hd::engine
