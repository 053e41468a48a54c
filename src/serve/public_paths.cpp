#include "serve/public_paths.h"

#include <cctype>
#include <cstring>

#include "serve/sandbox.h"

namespace hd::serve {
namespace fs = std::filesystem;

PublicPaths::PublicPaths(fs::path models_root, fs::path experiments_root)
    : models_(std::move(models_root)), experiments_(std::move(experiments_root)) {}

std::string PublicPaths::path(const std::string& absolute) const {
  const fs::path p = fs::path(absolute).lexically_normal();
  for (const fs::path* root : {&models_, &experiments_}) {
    if (inside(*root, p)) return p.lexically_relative(*root).generic_string();
  }
  return p.filename().string();
}

// A character that may stand inside a path name: a '/' after one is inside a path ("a/b"), a
// '/' after anything else starts one ("*/home/…", "\n/home/…", "dir=/home/…").
static bool in_path_name(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || (c != 0 && std::strchr("._-~+@%", c));
}

std::string PublicPaths::text(const std::string& text) const {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const bool starts = text[i] == '/' && (i == 0 || !in_path_name(text[i - 1]));
    if (!starts) {
      out += text[i++];
      continue;
    }
    // A quoted path runs to its closing quote (it may hold spaces); a bare one to a separator.
    const char quote = i > 0 && (text[i - 1] == '\'' || text[i - 1] == '"') ? text[i - 1] : 0;
    const size_t end = quote ? text.find(quote, i) : text.find_first_of(" \t\n'\"),;:]", i);
    const size_t stop = end == std::string::npos ? text.size() : end;
    out += path(text.substr(i, stop - i));
    i = stop;
  }
  return out;
}

void PublicPaths::scrub(nlohmann::json& j) const {
  if (j.is_string()) {
    j = text(j.get<std::string>());
  } else if (j.is_array() || j.is_object()) {
    for (auto& v : j) scrub(v);
  }
}

}  // namespace hd::serve
