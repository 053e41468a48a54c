// What `serve` lists: the GGUF models and text files under --models, the experiment files
// under --experiments with their headline numbers. Unreadable entries are skipped, not fatal.
#pragma once
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "serve/file_stamp.h"

#include "serve/public_paths.h"
#include "serve/sandbox.h"

namespace hd::serve {

nlohmann::json list_models(const Sandbox& models);
nlohmann::json list_texts(const Sandbox& models);
// The experiments with their headline numbers, newest first; model paths in them as `paths`
// shows them (relative, never absolute). Each file's line is read once per version of the file
// (file_stamp.h), not on every request: a folder of large results lists in milliseconds.
class ExperimentList {
 public:
  nlohmann::json list(const Sandbox& experiments, const PublicPaths& paths);

 private:
  std::mutex mu_;
  std::map<std::string, std::pair<FileStamp, nlohmann::json>> lines_;  // by real path
};
// The list once, with nothing kept (the tests, and whoever lists a folder once).
inline nlohmann::json list_experiments(const Sandbox& experiments, const PublicPaths& paths) {
  return ExperimentList().list(experiments, paths);
}

// Quant types a form may ask for ("B = A quantized to ...").
const std::vector<std::string>& form_quant_types();

}  // namespace hd::serve
