// A GGUF as the pipeline sees it: its vocabulary and the shape facts analyses need, loaded
// without the weights (llama.cpp's vocab_only), so an arm that runs elsewhere (RPC servers, a
// worker) never maps a model larger than this machine. The weights are Weights, loaded by
// the arm that computes with them.
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
  // False for tokenizer `no_vocab` (llama.cpp's fixtures): ids without texts, which nothing can
  // tokenize; its input is token ids (--tokens).
  bool has_vocab = true;
};

class Weights;

class Model {
 public:
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelInfo& info() const { return info_; }
  // Vocabulary and hyperparameters only; the arm's whole model after share_vocabulary.
  llama_model* handle() const { return model_; }

  // Reads the vocabulary from `w` (this file's weights, loaded by an arm in this process, which
  // hold it too) and frees its own vocabulary-only copy: 55 MiB for a 128k vocabulary, twice in
  // a diff of two 3B files. The weights then live as long as this model.
  void share_vocabulary(std::shared_ptr<Weights> w);

  // Tokenizes with the model's own rules; `add_bos` as the model asks. Throws InputError for
  // text the vocabulary cannot encode (naming the first line that fails), and for any text
  // without a vocabulary (llama.cpp aborts there).
  // `parse_special`: text that spells a special token ("<|im_start|>") is that token, as
  // llama-server reads a prompt; otherwise it is plain text, as llama-perplexity reads a corpus.
  std::vector<int32_t> tokenize(std::string_view text, bool add_special,
                                bool parse_special = false) const;
  // The token's piece; "" without a vocabulary (llama.cpp asserts there): its ids have no text.
  std::string token_text(int32_t token) const;
  // llama_detokenize: the text the tokens stand for, control tokens left out.
  std::string detokenize(std::span<const int32_t> tokens) const;

 private:
  friend std::shared_ptr<Model> model_load(const std::string& path);
  Model() = default;
  llama_model* model_ = nullptr;      // vocabulary and hyperparameters only, or weights_'s
  std::shared_ptr<Weights> weights_;  // model_'s owner after share_vocabulary
  ModelInfo info_;
};

// Checks the file (gguf_check) and reads its vocabulary and shape. Throws InputError.
std::shared_ptr<Model> model_load(const std::string& path);

// A GGUF's weights on the CPU or where a placement puts them.
class Weights {
 public:
  ~Weights();
  Weights(const Weights&) = delete;
  Weights& operator=(const Weights&) = delete;
  llama_model* handle() const { return model_; }
  const Placement& placement() const { return placement_; }
  const std::string& path() const { return path_; }
  bool mapping_resident() const { return mapping_resident_; }

 private:
  friend std::shared_ptr<Weights> load_weights(const std::string& path, const Placement& where);
  Weights() = default;
  llama_model* model_ = nullptr;
  Placement placement_;
  std::string path_;
  bool mapping_resident_ = false;  // nothing was copied out of the file's mapping: it is the weights
};

// Loads the weights, or hands out the ones already loaded for the same file and placement
// while any arm still holds them (arms of one file share its weights, as llama.cpp allows).
std::shared_ptr<Weights> load_weights(const std::string& path, const Placement& where);

// Where two vocabularies differ, a one-line description of the first difference; nullopt when
// they tokenize identically (same size, same token texts, same BOS handling).
std::optional<std::string> vocab_difference(const Model& a, const Model& b);

}  // namespace hd::engine
