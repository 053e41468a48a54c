#include "serve/sandbox.h"

#include <algorithm>

#include "errors.h"

namespace hd::serve {
namespace fs = std::filesystem;

bool inside(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

Sandbox::Sandbox(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw InputError("'" + root + "' is not a directory");
  root_ = fs::canonical(root, ec);
  if (ec) throw InputError("cannot resolve '" + root + "': " + ec.message());
}

std::optional<fs::path> Sandbox::resolve(std::string_view rel) const {
  if (rel.empty() || rel.find('\0') != std::string_view::npos) return std::nullopt;
  const fs::path asked(rel);
  if (asked.is_absolute()) return std::nullopt;
  std::error_code ec;
  const fs::path real = fs::canonical(root_ / asked, ec);  // resolves `..` and every symlink
  if (ec || !inside(root_, real)) return std::nullopt;
  return real;
}

std::string Sandbox::relative(const fs::path& p) const {
  return p.lexically_relative(root_).generic_string();
}

}  // namespace hd::serve
