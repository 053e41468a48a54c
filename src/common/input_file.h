// Checks a path a command is about to read, so that a FIFO never blocks it (opening one waits
// for a writer forever) and a device never floods it (/dev/zero has no end): inputs are
// regular files.
#pragma once
#include <sys/types.h>

#include <string>

namespace hd {

// "a FIFO", "a character device", "a directory", ... for a stat mode.
std::string file_kind(mode_t mode);

// InputError "<what> '<path>' does not exist" / "... is a directory" / "... is a FIFO, not a
// regular file". Symbolic links are followed.
void require_regular_file(const std::string& path, const std::string& what);

// Only the last of those: for callers that word "missing" and "directory" their own way.
void refuse_special_file(const std::string& path, const std::string& what);

}  // namespace hd
