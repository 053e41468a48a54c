#include "common/sha256.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "common/cache_dir.h"
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

static std::string hash_stream(const std::string& path) {
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file(std::fopen(path.c_str(), "rb"));
  if (!file) throw InputError("cannot open " + path + " to hash it");
  Sha256 h;
  std::vector<unsigned char> block(size_t{1} << 20);
  for (;;) {
    const size_t got = std::fread(block.data(), 1, block.size(), file.get());
    if (got > 0) h.update(block.data(), got);
    if (got < block.size()) break;
  }
  if (std::ferror(file.get())) throw RuntimeError("read error while hashing " + path);
  return h.hex();
}

std::string sha256_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError("cannot open " + path + " to hash it");
  std::error_code ec;
  const std::string identity =
      std::filesystem::absolute(path, ec).string() + "\n" + std::to_string(st.st_dev) + " " +
      std::to_string(st.st_ino) + " " + std::to_string(st.st_size) + " " +
      std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " " +
      std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
  std::filesystem::path memo;
  try {
    memo = cache_dir() / "hashes" / sha256_bytes(identity);
  } catch (const RuntimeError&) {
    return hash_stream(path);  // no cache directory: just hash
  }
  std::string known;
  if (std::ifstream in(memo); in >> known && known.size() == 64) return known;
  const std::string hex = hash_stream(path);
  std::filesystem::create_directories(memo.parent_path(), ec);
  const std::string tmp = memo.string() + ".part";
  if (std::ofstream out(tmp); out << hex << "\n") std::filesystem::rename(tmp, memo, ec);
  return hex;
}

}  // namespace hd
