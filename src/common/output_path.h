// Checks a path we are about to write, before any work is done, so that a bad -o costs the
// user one clear line instead of a finished computation.
#pragma once
#include <string>

namespace hd {

// InputError when the parent directory is missing or not writable, or `path` is a directory.
void check_output_path(const std::string& path);

}  // namespace hd
