#include "engine/model_presets.h"

#include "engine/model_maker.h"
#include "errors.h"

namespace hd::engine {
namespace {

constexpr Preset kTinyQwen3 = {
    "tiny-qwen3", "qwen3", "ggml-vocab-qwen2.gguf", 4, 256, 4, 2, 64, 768, 2048, 1000000.0f, 1e-6f,
    true,         false};

// Gemma 3 in small: head dim 128 (not n_embd / n_head, as in Gemma 3 1B's 256), so every
// quantized K cache applies; three local layers of window 64 (rope base 10000) to one global
// (1e6), where Gemma 3 has five to one of window 512: a 128-token chunk crosses the window.
// Gemma's own vocabulary has 262,144 tokens; llama.cpp's SPM test vocabulary (32,000) has the
// same tokenizer type and keeps the file small. Tied output, as in every Gemma 3.
constexpr Preset tiny_gemma3() {
  Preset p = kTinyQwen3;
  p.name = "tiny-gemma3";
  p.arch = "gemma3";
  p.vocab_file = "ggml-vocab-llama-spm.gguf";
  p.head_dim = 128;
  p.tied_output = true;
  p.n_swa = 64;
  p.swa_pattern = 4;
  p.rope_base_swa = 10000.0f;
  p.post_norms = true;
  return p;
}

// Qwen3-30B-A3B's layout (every layer routed, softmax gate, top-k weights renormalized) with 8
// experts of which 2 are used, where it has 128 and 8. n_ff is the width llama.cpp falls back
// to (n_ff / n_expert_used) were expert_feed_forward_length missing. Tied output (the real one
// is not) to halve the file: the qwen2 vocabulary has 151,936 tokens.
// q/k norm weights of mean 2 give attention scores of std ~4 instead of ~1. Scores that flat
// make each token's attention output an average of its prefix, a part of the residual every
// token shares; the router reads it as a bias and a layer can starve an expert (seed 1, gain 1:
// layer 3 sent none of 64 tokens to expert 2; gain 2: every layer of seeds 1-6 sends 4 or more
// to each).
constexpr Preset tiny_qwen3moe() {
  Preset p = kTinyQwen3;
  p.name = "tiny-qwen3moe";
  p.arch = "qwen3moe";
  p.n_ff = 512;
  p.tied_output = true;
  p.qk_norm_gain = 2.0f;
  p.n_expert = 8;
  p.n_expert_used = 2;
  p.n_ff_exp = 256;
  return p;
}

// Every weight's row length (n_embd, n_ff, n_ff_exp, head_dim * n_head) is a multiple of 256 so
// that K-quants apply without llama.cpp falling back to other types.
constexpr Preset kPresets[] = {
    {"tiny-llama", "llama", "ggml-vocab-llama-spm.gguf", 4, 256, 4, 2, 64, 768, 2048, 10000.0f,
     1e-5f, false, false},
    kTinyQwen3,
    {"demo-llama", "llama", nullptr, 4, 256, 4, 2, 64, 768, 2048, 10000.0f, 1e-5f, false, false},
    // Qwen3-0.6B's real shapes (config.json of Qwen/Qwen3-0.6B).
    {"qwen3-0.6b", "qwen3", "ggml-vocab-qwen2.gguf", 28, 1024, 16, 8, 128, 3072, 40960, 1000000.0f,
     1e-6f, true, true},
    // Llama-3.2-3B's shapes (config.json of meta-llama/Llama-3.2-3B): 28 layers, n_embd 3072,
    // 24 heads over 8 KV heads, MLP 8192, Llama 3's 128,256-token vocabulary, tied output. Not
    // its llama3 rope scaling (a rope_freqs tensor): the shape is what the benchmark needs.
    {"llama3.2-3b", "llama", "ggml-vocab-llama-bpe.gguf", 28, 3072, 24, 8, 128, 8192, 131072,
     500000.0f, 1e-5f, false, true},
    tiny_gemma3(),
    tiny_qwen3moe(),
};

}  // namespace

std::string joined_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

const Preset& find_preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) {
      return p;
    }
  }
  throw InputError("unknown model preset '" + name + "' (valid: " + joined_names(model_presets()) +
                   ")");
}

std::string preset_of_arch(const std::string& arch) {
  for (const Preset& p : kPresets) {
    if (arch == p.arch) return p.name;
  }
  return "";
}

std::vector<std::string> model_presets() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

}  // namespace hd::engine
