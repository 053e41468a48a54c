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

}  // namespace hd
