// What a generation needs of llama.cpp besides a decode (heterodyne generate): a prompt
// tokenized as llama-server tokenizes it, the model's own chat template, the end of a
// generation, and llama.cpp's own sampler chain.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/model.h"

struct llama_sampler;

namespace hd::engine {

// The prompt's tokens as llama-server reads a completion's prompt: BOS as the model asks and
// special tokens parsed (a chat template's markers are single tokens). InputError where the
// vocabulary cannot encode it.
std::vector<int32_t> tokenize_prompt(const Model& model, const std::string& text);

// The model's own chat template (GGUF tokenizer.chat_template) applied to one user message with
// the assistant's turn opened, as llama_chat_apply_template renders it. InputError for a model
// without a template, or one llama.cpp's built-in renderer does not recognise.
std::string render_chat(const Model& model, const std::string& user);

// Whether the token ends a generation (llama_vocab_is_eog: EOS, EOT, and the like).
bool ends_generation(const Model& model, int32_t token);

// The tokens the model's GGUF says never to generate (tokenizer.ggml.suppress_tokens): common/'s
// samplers give them -inf first, so llama-server never picks one, greedy or not.
std::vector<int32_t> suppressed_tokens(const Model& model);

// The seed llama.cpp reads as "draw a random seed" (LLAMA_DEFAULT_SEED): a run given it would not
// draw the same tokens twice, so it is refused.
inline constexpr uint32_t kRandomSeed = 0xFFFFFFFFu;

// llama.cpp's sampler chain with common/'s defaults (the chain llama-server and llama-cli
// build): the suppressed tokens' -inf bias, top-k 40, top-p 0.95, min-p 0.05, temperature, then a
// draw from the seed. The penalties, DRY, XTC, typical and top-n-sigma samplers are off at those
// defaults and left out.
class Sampler {
 public:
  Sampler(const Model& model, float temperature, uint32_t seed);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  // The token drawn from one position's raw logits; the chain's state (its RNG) moves on.
  int32_t sample(std::span<const float> logits);

 private:
  llama_sampler* chain_ = nullptr;
  std::vector<unsigned char> candidates_;  // the llama_token_data array, reused token to token
};

}  // namespace hd::engine
