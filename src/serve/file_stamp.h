// A file's identity as far as its content goes: what serve derives from a file (a result, a
// catalog line) is reused while all of these stay. A rewritten or replaced file changes its
// size, mtime or inode.
#pragma once
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <optional>

namespace hd::serve {

struct FileStamp {
  uintmax_t size = 0, inode = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// nullopt when the file cannot be stat'ed (gone, or not readable).
inline std::optional<FileStamp> stamp_of(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{static_cast<uintmax_t>(st.st_size), static_cast<uintmax_t>(st.st_ino),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

}  // namespace hd::serve
