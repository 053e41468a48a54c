// Random-weight GGUF models with real shapes and real vocabularies.
//
// heterodyne's tests and demos need models whose rows are multiples of 256 (so K-quants apply)
// and whose head dimension is >= 32 (so quantized KV caches apply); the small trained models we
// ship have neither. These presets give llama.cpp exactly the tensors its loaders expect, filled
// deterministically from a seed: the same (preset, seed, type) always yields the same bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hd::engine {

struct ModelSpec {
  std::string preset;        // one of model_presets()
  uint64_t seed = 1;         // same seed => byte-identical file
  std::string type = "f32";  // storage of the 2-D weight matrices: f32, f16 or bf16
};

// Names accepted in ModelSpec::preset: tiny-llama, tiny-qwen3, qwen3-0.6b.
std::vector<std::string> model_presets();

// Names accepted in ModelSpec::type: f32, f16, bf16 (case-insensitive).
std::vector<std::string> model_weight_types();

// Writes the model to out_path atomically (a temporary file in the same directory, then a
// rename), so a killed run never leaves a truncated GGUF behind. Unknown preset or type:
// InputError; vocabulary missing from the llama.cpp tree or a write failure: RuntimeError.
void make_model(const ModelSpec& spec, const std::string& out_path);

}  // namespace hd::engine
