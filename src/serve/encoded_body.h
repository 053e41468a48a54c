// A response body compressed once and kept, not once per request.
//
// cpp-httplib (Debian's 0.11.4, built with Brotli) compresses every compressible response itself,
// Brotli at its maximum quality: 1.9 s for an 800 KB result against 0.2 s plain (docs/serve.md,
// "Speed"). Here a body is compressed when a client first asks for an encoding, at a fast level
// (Brotli 3, gzip 1), kept beside the plain bytes, and sent through a content provider with its
// length, which httplib passes on as it is.
#pragma once
#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/file_stamp.h"

namespace hd::serve {

enum class Encoding { kPlain, kGzip, kBrotli };

// The encoding a request's Accept-Encoding prefers among ours: br, then gzip, then none. A coding
// listed with q=0 is refused by the client, not offered.
Encoding accepted_encoding(const std::string& accept_encoding);

// `data` compressed: Brotli at quality 3, gzip (zlib) at level 1. RuntimeError when the
// library fails (out of memory).
std::string compress(const std::string& data, Encoding e);

class EncodedBody {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  // `headers`: sent with the body wherever it is sent (what the body's source says of it).
  EncodedBody(std::string plain, std::string content_type, Headers headers = {})
      : plain_(std::move(plain)), type_(std::move(content_type)), headers_(std::move(headers)) {}
  // The bytes in encoding `e`, compressed on the first call for it.
  const std::string& bytes(Encoding e) const;
  const std::string& content_type() const { return type_; }
  const Headers& headers() const { return headers_; }
  // What the body holds now, in bytes, every encoding made so far.
  size_t held_bytes() const;

 private:
  std::string plain_, type_;
  Headers headers_;
  mutable std::mutex mu_;  // held while an encoding is made
  mutable std::optional<std::string> gzip_, brotli_;
  // What the encodings made so far hold, read without waiting for one being made.
  mutable std::atomic<size_t> encoded_bytes_{0};
};

// Answers `req` with `body` in the encoding it accepts (Vary: Accept-Encoding).
void send(const httplib::Request& req, httplib::Response& res,
          std::shared_ptr<const EncodedBody> body);

// Bodies derived from files, keyed by (what, file stamp), least recently used dropped past
// `max_bytes`. Thread-safe; two requests for one missing body may both make it (the later one
// is kept), which costs time, never a wrong answer.
class BodyCache {
 public:
  explicit BodyCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  std::shared_ptr<const EncodedBody> get(const std::string& what, const FileStamp& stamp,
                                         const std::function<std::shared_ptr<EncodedBody>()>& make);

 private:
  struct Entry {
    std::string what;
    FileStamp stamp;
    std::shared_ptr<const EncodedBody> body;
  };
  void trim();
  size_t max_bytes_;
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace hd::serve
