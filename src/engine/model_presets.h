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
  bool qk_norm;      // qwen3 RMS-normalizes q and k per head (attn_q_norm / attn_k_norm)
  bool tied_output;  // no output.weight: llama.cpp reuses token_embd as the output head
};

// The preset called `name`; InputError naming the valid ones otherwise.
const Preset& find_preset(const std::string& name);

// Names as an error message lists them: "a, b, c".
std::string joined_names(const std::vector<std::string>& names);

}  // namespace hd::engine
