// A file's identity as far as its content goes: what serve derives from a file (a result, a
// catalog line) is reused while all of these stay. A rewritten or replaced file changes its
// size, mtime or inode.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>

namespace hd::serve {

// Two commits of a SQLite file within one tick of the file system's clock keep its size, inode
// and times: its header's change counter (bytes 24-27, advanced by every commit of a rollback
// journal, the mode heterodyne's files are written in) tells them apart.
struct FileStamp {
  uintmax_t size = 0, inode = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  uint32_t sqlite_changes = 0;  // 0 for a file that is not SQLite's
  bool operator==(const FileStamp&) const = default;
};

// nullopt when the file cannot be stat'ed (gone, or not readable).
inline std::optional<FileStamp> stamp_of(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  FileStamp s{static_cast<uintmax_t>(st.st_size), static_cast<uintmax_t>(st.st_ino),
              static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
              static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec, 0};
  // Never blocked by a FIFO, even one swapped in since the stat: opened without waiting, read
  // only where it is a regular file.
  const int fd = S_ISREG(st.st_mode) ? ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
  struct stat opened {};
  unsigned char head[28] = {};
  const bool read_whole = fd >= 0 && ::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode) &&
                          ::pread(fd, head, sizeof head, 0) == static_cast<ssize_t>(sizeof head);
  if (fd >= 0) ::close(fd);
  if (read_whole && std::memcmp(head, "SQLite format 3", 16) == 0) {
    s.sqlite_changes = static_cast<uint32_t>(head[24]) << 24 |
                       static_cast<uint32_t>(head[25]) << 16 |
                       static_cast<uint32_t>(head[26]) << 8 | head[27];
  }
  return s;
}

}  // namespace hd::serve
