#include "common/sha256.h"

#include <openssl/evp.h>

#include "errors.h"

namespace hd {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1) {
    throw RuntimeError("OpenSSL could not start a SHA-256 digest");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::update(const void* data, size_t n) {
  if (EVP_DigestUpdate(ctx_->md, data, n) != 1) throw RuntimeError("OpenSSL SHA-256 update failed");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->md, digest, &len);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kDigits[digest[i] >> 4]);
    out.push_back(kDigits[digest[i] & 0x0f]);
  }
  return out;
}

std::string sha256_bytes(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex();
}

}  // namespace hd
