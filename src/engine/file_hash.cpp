#include "engine/file_hash.h"

#include <openssl/evp.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "errors.h"

namespace hd::engine {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
struct DigestFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string to_hex(const unsigned char* bytes, unsigned int n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * static_cast<size_t>(n));
  for (unsigned int i = 0; i < n; ++i) {
    hex.push_back(kDigits[bytes[i] >> 4]);
    hex.push_back(kDigits[bytes[i] & 0x0f]);
  }
  return hex;
}

}  // namespace

std::string sha256_file(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) throw InputError("cannot open " + path + " to hash it");

  std::unique_ptr<EVP_MD_CTX, DigestFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw RuntimeError("OpenSSL could not start a SHA-256 digest");
  }
  std::vector<unsigned char> block(size_t{1} << 20);
  for (;;) {
    const size_t got = std::fread(block.data(), 1, block.size(), file.get());
    if (got > 0 && EVP_DigestUpdate(ctx.get(), block.data(), got) != 1) {
      throw RuntimeError("OpenSSL failed while hashing " + path);
    }
    if (got < block.size()) break;
  }
  if (std::ferror(file.get())) throw RuntimeError("read error while hashing " + path);

  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &n) != 1) {
    throw RuntimeError("OpenSSL could not finish the SHA-256 of " + path);
  }
  return to_hex(digest, n);
}

}  // namespace hd::engine
