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

#include "common/output_file.h"

namespace hd::engine {

// A SentencePiece-style vocabulary for llama.cpp's "llama" (SPM) tokenizer.
struct SpmVocabulary {
  std::vector<std::string> tokens;  // piece text, spaces as U+2581; "<0x41>" for byte tokens
  std::vector<float> scores;        // merge priority: higher merges first
  std::vector<int32_t> types;       // llama_token_type: 1 normal, 2 unknown, 3 control, 6 byte
  int32_t unk = 0;
  int32_t bos = 1;
  int32_t eos = 2;
};

struct ModelSpec {
  std::string preset;        // one of model_presets()
  uint64_t seed = 1;         // same seed => byte-identical file
  std::string type = "f32";  // storage of the 2-D weight matrices: f32, f16 or bf16
  // Required by the "demo-llama" preset (which has no vocabulary of its own), refused by the
  // others. Written without a BOS (add_bos false) and without a space prefix, so text
  // round-trips through llama.cpp's tokenizer byte for byte.
  const SpmVocabulary* vocabulary = nullptr;
  // A model that differs from the seed's in some tensors only (a known answer: B = A with only
  // its router perturbed): each value of every tensor whose name contains `perturb` gets
  // perturb_scale times an independent draw of the same spread added. Empty: none.
  std::string perturb;
  double perturb_scale = 0.05;
};

// Names accepted in ModelSpec::preset: tiny-llama, tiny-qwen3, qwen3-0.6b, llama3.2-3b,
// tiny-gemma3 (local and global attention, post-norms), tiny-qwen3moe (8 experts, 2 used),
// demo-llama (the shape heterodyne trains for its demo: tiny-llama's, to be filled by training).
std::vector<std::string> model_presets();

// Names accepted in ModelSpec::type: f32, f16, bf16 (case-insensitive).
std::vector<std::string> model_weight_types();

// Writes the model to out_path atomically (a temporary file in the same directory, then a
// rename), so a killed run never leaves a truncated GGUF behind. Unknown preset or type:
// InputError; vocabulary missing from the llama.cpp tree or a write failure: RuntimeError.
void make_model(const ModelSpec& spec, const std::string& out_path,
                const OutputPolicy& policy = {});

// The bytes make_model(spec) writes, from the same metadata and tensor descriptors (no value is
// made): what make-model --list-presets prints. The same errors as make_model's.
uint64_t model_file_bytes(const ModelSpec& spec);

}  // namespace hd::engine
