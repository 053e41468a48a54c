#include "engine/model_presets.h"

#include "engine/model_maker.h"
#include "errors.h"

namespace hd::engine {
namespace {

// Every 2-D weight's row length (n_embd, n_ff, head_dim * n_head) is a multiple of 256 so that
// K-quants apply without llama.cpp falling back to other types.
constexpr Preset kPresets[] = {
    {"tiny-llama", "llama", "ggml-vocab-llama-spm.gguf", 4, 256, 4, 2, 64, 768, 2048, 10000.0f,
     1e-5f, false, false},
    {"tiny-qwen3", "qwen3", "ggml-vocab-qwen2.gguf", 4, 256, 4, 2, 64, 768, 2048, 1000000.0f, 1e-6f,
     true, false},
    {"demo-llama", "llama", nullptr, 4, 256, 4, 2, 64, 768, 2048, 10000.0f, 1e-5f, false, false},
    // Qwen3-0.6B's real shapes (config.json of Qwen/Qwen3-0.6B).
    {"qwen3-0.6b", "qwen3", "ggml-vocab-qwen2.gguf", 28, 1024, 16, 8, 128, 3072, 40960, 1000000.0f,
     1e-6f, true, true},
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

std::vector<std::string> model_presets() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

}  // namespace hd::engine
