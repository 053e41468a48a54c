// SHA-256 (OpenSSL) as lower-case hex: the identity of models, texts and experiment contents.
// Sits below every layer; it knows nothing of heterodyne.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace hd {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::string hex();  // finishes the digest; call once

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string sha256_bytes(std::string_view bytes);

// SHA-256 of a file's bytes, streamed in 1 MiB blocks. Hashing a multi-gigabyte model takes
// seconds, so the result is remembered in the cache directory under the file's identity
// (absolute path, device, inode, size, modification and change times, in nanoseconds): any
// write to the file changes that identity. InputError when the file cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace hd
