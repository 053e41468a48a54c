#include "engine/mapped_pages.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <sstream>

namespace hd::engine {

namespace {

struct Range {
  uintptr_t start = 0, end = 0;
  bool writable = false;
};

// Calls `each` with every mapping of the file (matched by device and inode, not by name) and,
// with smaps, the lines that follow its header.
void for_each_mapping(const std::string& path, const char* proc_file,
                      const std::function<void(Range, std::istream& rest)>& each) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return;
  std::ifstream maps(proc_file);
  std::string line;
  bool in_file = false;
  Range current;
  std::stringstream rest;
  auto flush = [&] {
    if (in_file) each(current, rest);
    rest.str("");
    rest.clear();
  };
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0, offset = 0, inode = 0;
    unsigned dev_major = 0, dev_minor = 0;
    char perms[8] = {};
    // "start-end perms offset major:minor inode path": a mapping's header line
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &offset,
                    &dev_major, &dev_minor, &inode) == 7) {
      flush();
      in_file = inode == st.st_ino && dev_major == major(st.st_dev) &&
                dev_minor == minor(st.st_dev);
      current = {lo, hi, perms[1] == 'w'};
    } else if (in_file) {
      rest << line << '\n';
    }
  }
  flush();
}

}  // namespace

size_t mapped_resident_bytes(const std::string& path) {
  size_t bytes = 0;
  for_each_mapping(path, "/proc/self/smaps", [&](Range, std::istream& rest) {
    std::string key;
    size_t kb = 0;
    std::string line;
    while (std::getline(rest, line)) {
      std::istringstream fields(line);
      if (fields >> key >> kb && key == "Rss:") bytes += kb * 1024;
    }
  });
  return bytes;
}

void release_mapped_pages(const std::string& path) {
  for_each_mapping(path, "/proc/self/maps", [](Range r, std::istream&) {
    if (r.writable) return;  // a private page written to would be lost: never those
    madvise(reinterpret_cast<void*>(r.start), r.end - r.start, MADV_DONTNEED);
  });
}

void populate_mapped_pages(const std::string& path) {
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;  // linux/mman.h; older libc headers lack it
#endif
  for_each_mapping(path, "/proc/self/maps", [](Range r, std::istream&) {
    if (r.writable) return;
    madvise(reinterpret_cast<void*>(r.start), r.end - r.start, MADV_POPULATE_READ);
  });
}

}  // namespace hd::engine
