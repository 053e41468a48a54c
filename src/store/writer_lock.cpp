#include "store/writer_lock.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace hd::store {

// A line of /proc/locks: "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (a waiter's has "->"
// after the number: it holds nothing yet).
std::optional<bool> flocked(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  std::ifstream locks("/proc/locks");
  if (!locks) return std::nullopt;
  std::string inode(1, ':');
  inode += std::to_string(st.st_ino);
  for (std::string line; std::getline(locks, line);) {
    std::istringstream in(line);
    std::string number, kind, advisory, access, where;
    std::string pid;
    if (!(in >> number >> kind) || kind != "FLOCK") continue;  // "->" or a POSIX/OFD lock
    if (!(in >> advisory >> access >> pid >> where)) continue;
    const bool same = where.size() > inode.size() &&
                      where.compare(where.size() - inode.size(), inode.size(), inode) == 0;
    if (same) return true;
  }
  return false;
}

}  // namespace hd::store
