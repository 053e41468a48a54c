#include "serve/encoded_body.h"

#include <brotli/encode.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <sstream>

#include "errors.h"
#include "serve/request_head.h"

namespace hd::serve {
namespace {

// Measured on the demo's largest result (804,692 B of JSON): Brotli 3 makes 291,797 B in 12 ms
// where 5 makes 277,370 B in 39 ms and 11 (httplib's) 212,577 B in 1.6 s; gzip 1 makes
// 326,582 B in 7 ms where 6 makes 283,422 B in 36 ms. A local page waits for time, not bytes.
constexpr int kBrotliQuality = 3;
constexpr int kGzipLevel = 1;

// A q value of zero (q=0, q=0.0, q=0.000) refuses the coding.
bool refused(const std::string& params) {
  std::istringstream in(params);
  std::string p;
  while (std::getline(in, p, ';')) {
    p = trim_ows(p);
    if (p.size() < 2 || std::tolower(static_cast<unsigned char>(p[0])) != 'q' || p[1] != '=')
      continue;
    const std::string q = p.substr(2);
    return !q.empty() && q.find_first_not_of("0.") == std::string::npos;
  }
  return false;
}

std::string brotli(const std::string& data) {
  std::string out(BrotliEncoderMaxCompressedSize(data.size()), '\0');
  size_t size = out.size();
  if (out.empty() ||
      !BrotliEncoderCompress(kBrotliQuality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, data.size(),
                             reinterpret_cast<const uint8_t*>(data.data()), &size,
                             reinterpret_cast<uint8_t*>(out.data()))) {
    throw RuntimeError("cannot compress a response with Brotli (out of memory?)");
  }
  out.resize(size);
  return out;
}

std::string gzip(const std::string& data) {
  z_stream zs{};
  // 15 + 16: the largest window, with a gzip header and trailer rather than zlib's.
  if (deflateInit2(&zs, kGzipLevel, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw RuntimeError("cannot compress a response with gzip (out of memory?)");
  }
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw RuntimeError("cannot compress a response with gzip");
  return out;
}

}  // namespace

Encoding accepted_encoding(const std::string& accept_encoding) {
  // Per coding: offered (true) or refused with q=0 (false); "*" stands for every coding the
  // client does not name.
  std::map<std::string, bool> named;
  std::optional<bool> any;
  std::istringstream in(accept_encoding);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t semi = item.find(';');
    std::string coding = trim_ows(item.substr(0, semi));
    std::transform(coding.begin(), coding.end(), coding.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const bool offered = semi == std::string::npos || !refused(item.substr(semi + 1));
    if (coding == "*")
      any = offered;
    else if (!coding.empty())
      named[coding == "x-gzip" ? "gzip" : coding] = offered;
  }
  const auto ok = [&](const std::string& c) {
    const auto it = named.find(c);
    return it != named.end() ? it->second : any.value_or(false);
  };
  return ok("br") ? Encoding::kBrotli : ok("gzip") ? Encoding::kGzip : Encoding::kPlain;
}

std::string compress(const std::string& data, Encoding e) {
  return e == Encoding::kBrotli ? brotli(data) : e == Encoding::kGzip ? gzip(data) : data;
}

const std::string& EncodedBody::bytes(Encoding e) const {
  if (e == Encoding::kPlain) return plain_;
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = e == Encoding::kBrotli ? brotli_ : gzip_;
  if (!slot) {
    slot = compress(plain_, e);
    encoded_bytes_ += slot->size();
  }
  return *slot;
}

size_t EncodedBody::held_bytes() const { return plain_.size() + encoded_bytes_.load(); }

void send(const httplib::Request& req, httplib::Response& res,
          std::shared_ptr<const EncodedBody> body) {
  res.set_header("Vary", "Accept-Encoding");
  for (const auto& [name, value] : body->headers()) res.set_header(name, value);
  const std::string& plain = body->bytes(Encoding::kPlain);
  // A range of the plain bytes: httplib cuts it from a whole body, checks it (416 past the end)
  // and may compress the piece; its content providers are handed unchecked ranges.
  if (!req.ranges.empty() || plain.empty()) {
    res.set_content(plain, body->content_type().c_str());
    return;
  }
  // Small bodies are not worth a compressor's start.
  const Encoding e = plain.size() < 1024
                         ? Encoding::kPlain
                         : accepted_encoding(req.get_header_value("Accept-Encoding"));
  const std::string& bytes = body->bytes(e);
  if (e != Encoding::kPlain)
    res.set_header("Content-Encoding", e == Encoding::kBrotli ? "br" : "gzip");
  // A provider with a length: httplib writes the bytes as they are (it compresses only bodies
  // set whole and chunked providers). The body is held until the last byte is written.
  res.set_content_provider(bytes.size(), body->content_type().c_str(),
                           [body, &bytes](size_t offset, size_t length, httplib::DataSink& sink) {
                             if (offset >= bytes.size()) return false;
                             return sink.write(bytes.data() + offset,
                                               std::min(length, bytes.size() - offset));
                           });
}

std::shared_ptr<const EncodedBody> BodyCache::get(
    const std::string& what, const FileStamp& stamp,
    const std::function<std::shared_ptr<EncodedBody>()>& make) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->what != what || !(it->stamp == stamp)) continue;
      entries_.splice(entries_.begin(), entries_, it);
      return entries_.front().body;
    }
  }
  std::shared_ptr<const EncodedBody> body = make();  // outside the lock: it may take a while
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(entries_, [&](const Entry& e) { return e.what == what; });  // older stamps too
  entries_.push_front({what, stamp, body});
  trim();
  return body;
}

void BodyCache::trim() {
  size_t held = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    held += it->body->held_bytes();
    // The newest entry stays whatever its size: it is the one being answered.
    if (held > max_bytes_ && it != entries_.begin()) {
      entries_.erase(it, entries_.end());
      return;
    }
  }
}

}  // namespace hd::serve
