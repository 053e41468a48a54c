// Content hashes of files: the identity of a model in caches and in experiment provenance.
#pragma once
#include <string>

namespace hd::engine {

// SHA-256 of a file's bytes as 64 lower-case hex digits. Streams the file in 1 MiB blocks, so a
// multi-gigabyte model costs no memory. A missing or unreadable file is an InputError.
std::string sha256_file(const std::string& path);

}  // namespace hd::engine
