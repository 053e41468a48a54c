// What `serve` lists: the GGUF models and text files under --models, the experiment files
// under --experiments with their headline numbers. Unreadable entries are skipped, not fatal.
#pragma once
#include <nlohmann/json.hpp>

#include "serve/public_paths.h"
#include "serve/sandbox.h"

namespace hd::serve {

nlohmann::json list_models(const Sandbox& models);
nlohmann::json list_texts(const Sandbox& models);
// Model paths in it as `paths` shows them: relative, never absolute.
nlohmann::json list_experiments(const Sandbox& experiments, const PublicPaths& paths);

// Quant types a form may ask for ("B = A quantized to ...").
const std::vector<std::string>& form_quant_types();

}  // namespace hd::serve
