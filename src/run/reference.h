// A reference directory written by `capture`, read back: the manifest, the activations and the
// arm that made them. Shared by calibrate, check and quant-risk.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/arm.h"
#include "store/safetensors.h"

namespace hd::run {

struct Reference {
  nlohmann::json manifest;
  store::SafetensorsFile activations;
  std::vector<int32_t> tokens;        // the prompt
  int decode_steps = 0;               // single-token steps stored after it
  std::vector<int32_t> continuation;  // the tokens those steps were fed
};

// InputError for a directory that is not a reference, or one of another schema.
Reference load_reference(const std::string& dir);

// The settings the reference was captured with.
engine::ArmSettings reference_arm(const nlohmann::json& manifest);

// A JSON file, or InputError(missing) when it cannot be read, or one naming it when it is not
// JSON.
nlohmann::json read_json_file(const std::string& path, const std::string& missing);

}  // namespace hd::run
