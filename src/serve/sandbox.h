// The only files `serve` reads or writes are under its two roots. Every path that comes from a
// request goes through here: `..`, absolute paths, NUL bytes and symlinks that lead outside are
// refused before anything is opened.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace hd::serve {

class Sandbox {
 public:
  // Throws InputError when `root` is not an existing directory.
  explicit Sandbox(const std::string& root);

  // The canonical path of `rel` (relative to the root) when it exists and, with every symlink
  // resolved, is still inside the root; nullopt otherwise.
  std::optional<std::filesystem::path> resolve(std::string_view rel) const;
  // `p` relative to the root, as the API spells it.
  std::string relative(const std::filesystem::path& p) const;
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;  // canonical
};

// True when `p` is `root` or below it (both canonical).
bool inside(const std::filesystem::path& root, const std::filesystem::path& p);

}  // namespace hd::serve
