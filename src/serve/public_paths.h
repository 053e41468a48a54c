// Paths as the JSON API shows them: never absolute, so no page learns the user's name or the
// layout of their disk. A path under --models is shown relative to it (as /api/models lists
// it), one under --experiments relative to that; any other shows its file name only.
// Experiment files themselves keep the absolute paths diff recorded: verify and resume need them.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace hd::serve {

class PublicPaths {
 public:
  PublicPaths(std::filesystem::path models_root, std::filesystem::path experiments_root);

  std::string path(const std::string& absolute) const;
  // Every absolute path inside `text` (a command line, an error message) rewritten by path().
  std::string text(const std::string& text) const;
  // text() applied to every string in `j`, recursively.
  void scrub(nlohmann::json& j) const;

 private:
  std::filesystem::path models_, experiments_;
};

}  // namespace hd::serve
