// What `serve` lists: the GGUF models and text files under --models, the experiment files
// under --experiments with their headline numbers. Unreadable entries are skipped, not fatal.
#pragma once
#include <nlohmann/json.hpp>

#include "serve/sandbox.h"

namespace hd::serve {

nlohmann::json list_models(const Sandbox& models);
nlohmann::json list_texts(const Sandbox& models);
nlohmann::json list_experiments(const Sandbox& experiments);

// Quant types a form may ask for ("B = A quantized to ...").
const std::vector<std::string>& form_quant_types();

}  // namespace hd::serve
