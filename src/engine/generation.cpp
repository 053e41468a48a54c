#include "engine/generation.h"

#include <cmath>
#include <cstring>

#include "errors.h"
#include "llama.h"

namespace hd::engine {

std::vector<int32_t> tokenize_prompt(const Model& model, const std::string& text) {
  return model.tokenize(text, true, true);
}

std::string render_chat(const Model& model, const std::string& user) {
  const char* tmpl = llama_model_chat_template(model.handle(), nullptr);
  if (tmpl == nullptr) {
    throw InputError("--chat: '" + model.info().path + "' has no chat template "
                     "(tokenizer.chat_template): give the prompts as the model should read them");
  }
  const llama_chat_message message{"user", user.c_str()};
  std::string out(user.size() * 2 + 256, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int32_t n = llama_chat_apply_template(tmpl, &message, 1, true, out.data(),
                                                static_cast<int32_t>(out.size()));
    if (n < 0) {
      throw InputError("--chat: llama.cpp does not recognise '" + model.info().path +
                       "''s chat template (its built-in renderer knows the common families; "
                       "llama-server's --jinja renders others): give the prompts rendered");
    }
    if (static_cast<size_t>(n) <= out.size()) {
      out.resize(static_cast<size_t>(n));
      return out;
    }
    out.resize(static_cast<size_t>(n));  // n is the size it needs
  }
  throw RuntimeError("llama_chat_apply_template did not fit its own size");
}

bool ends_generation(const Model& model, int32_t token) {
  return llama_vocab_is_eog(llama_model_get_vocab(model.handle()), token);
}

namespace {
// llama_vocab_get_suppress_tokens came after some builds a worker may link (node-llama-cpp@3.14.0
// lacks it): found by argument-dependent lookup where it exists, none where it does not.
template <class V>
auto suppress_tokens_of(const V* vocab, int32_t* n, int) -> decltype(llama_vocab_get_suppress_tokens(vocab, n)) {
  return llama_vocab_get_suppress_tokens(vocab, n);
}
template <class V>
const llama_token* suppress_tokens_of(const V*, int32_t* n, long) {
  *n = 0;
  return nullptr;
}
}  // namespace

std::vector<int32_t> suppressed_tokens(const Model& model) {
  int32_t n = 0;
  const llama_token* t = suppress_tokens_of(llama_model_get_vocab(model.handle()), &n, 0);
  return t == nullptr || n <= 0 ? std::vector<int32_t>{} : std::vector<int32_t>(t, t + n);
}

Sampler::Sampler(const Model& model, float temperature, uint32_t seed) {
  if (seed == kRandomSeed) throw InputError("seed 4294967295 means a random seed to llama.cpp");
  chain_ = llama_sampler_chain_init(llama_sampler_chain_default_params());
  std::vector<llama_logit_bias> bias;
  for (const int32_t t : suppressed_tokens(model)) bias.push_back({t, -INFINITY});
  if (!bias.empty()) {
    llama_sampler_chain_add(chain_, llama_sampler_init_logit_bias(model.info().n_vocab,
                                                                  static_cast<int32_t>(bias.size()),
                                                                  bias.data()));
  }
  llama_sampler_chain_add(chain_, llama_sampler_init_top_k(40));
  llama_sampler_chain_add(chain_, llama_sampler_init_top_p(0.95f, 0));
  llama_sampler_chain_add(chain_, llama_sampler_init_min_p(0.05f, 0));
  llama_sampler_chain_add(chain_, llama_sampler_init_temp(temperature));
  llama_sampler_chain_add(chain_, llama_sampler_init_dist(seed));
}

Sampler::~Sampler() { llama_sampler_free(chain_); }

int32_t Sampler::sample(std::span<const float> logits) {
  candidates_.resize(logits.size() * sizeof(llama_token_data));
  auto* cur = reinterpret_cast<llama_token_data*>(candidates_.data());
  for (size_t i = 0; i < logits.size(); ++i) {
    cur[i] = {static_cast<llama_token>(i), logits[i], 0.0f};
  }
  llama_token_data_array arr{cur, logits.size(), -1, false};
  llama_sampler_apply(chain_, &arr);
  if (arr.selected < 0 || static_cast<size_t>(arr.selected) >= arr.size)
    throw RuntimeError("llama.cpp's sampler chain selected no token");
  const int32_t token = arr.data[arr.selected].id;
  llama_sampler_accept(chain_, token);
  return token;
}

}  // namespace hd::engine
