// The shapes make_model knows by name (model_maker.h lists them): each preset's architecture,
// vocabulary and hyperparameters.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hd::engine {

struct Preset {
  const char* name;
  const char* arch;        // general.architecture; also the prefix of its hyperparameter keys
  const char* vocab_file;  // a vocabulary GGUF in <llama.cpp>/models/; null: the spec gives one
  uint32_t n_layer;
  uint32_t n_embd;
  uint32_t n_head;
  uint32_t n_head_kv;
  uint32_t head_dim;
  uint32_t n_ff;
  uint32_t n_ctx;
  float rope_base;
  float rms_eps;
  bool qk_norm;      // qwen3 and gemma3 RMS-normalize q and k per head (attn_q_norm / attn_k_norm)
  bool tied_output;  // no output.weight: llama.cpp reuses token_embd as the output head
  // Mean of the attn_q_norm / attn_k_norm weights: q.k / sqrt(head_dim) has std ~gain^2, so
  // above 1 attention picks a few positions rather than averaging the prefix.
  float qk_norm_gain = 1.0f;
  // Gemma 3's local attention: every layer but each swa_pattern-th one (llama.cpp's
  // set_swa_pattern) sees only the last n_swa tokens, with its own rope base. 0: none.
  uint32_t n_swa = 0;
  uint32_t swa_pattern = 0;
  float rope_base_swa = 0.0f;
  bool post_norms = false;  // gemma3's RMS norms of the attention and MLP outputs
  // A routed MLP on every layer: n_expert experts of width n_ff_exp, n_expert_used per token.
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;
};

// The preset called `name`; InputError naming the valid ones otherwise.
const Preset& find_preset(const std::string& name);

// The first preset of architecture `arch`, or "" (make-model --arch names it where llama.cpp's
// fixture generator skips the architecture).
std::string preset_of_arch(const std::string& arch);

// Names as an error message lists them: "a, b, c".
std::string joined_names(const std::vector<std::string>& names);

}  // namespace hd::engine
