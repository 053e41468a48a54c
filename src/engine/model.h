// A loaded GGUF: its weights, vocabulary and the shape facts analyses need.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/devices.h"

struct llama_model;

namespace hd::engine {

struct ModelInfo {
  std::string path;
  std::string architecture;
  std::string name;
  std::string description;  // llama.cpp's, e.g. "llama 260K all F32"
  int n_layer = 0;
  int n_embd = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int n_ctx_train = 0;
  int n_vocab = 0;
  uint64_t n_params = 0;
  uint64_t file_size = 0;
  bool add_bos = false;
  int32_t bos = -1;
};

class Model {
 public:
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelInfo& info() const { return info_; }
  llama_model* handle() const { return model_; }
  const Placement& placement() const { return placement_; }

  // Tokenizes with the model's own rules; `add_bos` as the model asks. Throws InputError for
  // text the vocabulary cannot encode (naming the first line that fails).
  std::vector<int32_t> tokenize(std::string_view text, bool add_special) const;
  std::string token_text(int32_t token) const;
  // llama_detokenize: the text the tokens stand for, control tokens left out.
  std::string detokenize(std::span<const int32_t> tokens) const;

 private:
  friend std::shared_ptr<Model> model_load(const std::string& path, const Placement& placement);
  Model() = default;
  llama_model* model_ = nullptr;
  ModelInfo info_;
  Placement placement_;
};

// Checks the file (gguf_check) and loads it, its weights on the CPU or where `placement`
// puts them. Throws InputError / RuntimeError.
std::shared_ptr<Model> model_load(const std::string& path, const Placement& placement = {});

// Where two vocabularies differ, a one-line description of the first difference; nullopt when
// they tokenize identically (same size, same token texts, same BOS handling).
std::optional<std::string> vocab_difference(const Model& a, const Model& b);

}  // namespace hd::engine
