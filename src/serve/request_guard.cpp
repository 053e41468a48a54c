#include "serve/request_guard.h"

#include <sys/random.h>

#include <algorithm>
#include <cctype>

#include "errors.h"
#include "serve/request_head.h"

namespace hd::serve {
namespace {

// A header value as a refusal quotes it: its first 80 bytes, each byte outside printable ASCII
// (a control, a byte of UTF-8: a bidirectional override, a line separator) as '?'. A header
// carries ASCII; the refusal then shows nothing a hostile page chose to be drawn.
std::string header_quoted(const std::string& v) {
  std::string out = v.substr(0, 80);
  for (char& c : out) {
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  }
  return "'" + out + (v.size() > 80 ? "...'" : "'");
}

std::string bracketed(const std::string& address) {
  return address.find(':') != std::string::npos && address.front() != '[' ? "[" + address + "]"
                                                                          : address;
}

struct HostPort {
  std::string name;  // lower case; IPv6 in brackets
  int port = 80;
};

// "name", "name:port", "[v6]", "[v6]:port"; nullopt for anything else.
std::optional<HostPort> parse_host(const std::string& value) {
  const std::string v = lower(value);
  HostPort hp;
  std::string rest;
  if (!v.empty() && v[0] == '[') {
    const size_t close = v.find(']');
    if (close == std::string::npos) return std::nullopt;
    hp.name = v.substr(0, close + 1);
    rest = v.substr(close + 1);
  } else {
    const size_t colon = v.find(':');
    if (colon != std::string::npos && v.find(':', colon + 1) != std::string::npos)
      return std::nullopt;  // an IPv6 address without brackets
    hp.name = v.substr(0, colon);
    rest = colon == std::string::npos ? "" : v.substr(colon);
  }
  if (hp.name.empty() || hp.name == "[]") return std::nullopt;
  if (!rest.empty()) {
    const std::string digits = rest.substr(1);
    if (rest[0] != ':' || digits.empty() || digits.size() > 5 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return std::nullopt;
    hp.port = std::stoi(digits);
  }
  return hp;
}

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string cookie_name(int port) { return "heterodyne-token-" + std::to_string(port); }

std::string cookie_value(const httplib::Request& req, const std::string& name) {
  const size_t n = req.get_header_value_count("Cookie");
  for (size_t i = 0; i < n; ++i) {
    const std::string header = req.get_header_value("Cookie", i);
    size_t start = 0;
    while (start <= header.size()) {
      const size_t end = std::min(header.find(';', start), header.size());
      const std::string pair = trim_ows(header.substr(start, end - start));
      const size_t eq = pair.find('=');
      if (eq != std::string::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
      start = end + 1;
    }
  }
  return "";
}

}  // namespace

std::string new_token() {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    throw RuntimeError("cannot read random bytes for the server's token");
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

RequestGuard::RequestGuard(std::string host_option, std::string token, size_t max_body)
    : host_option_(bracketed(lower(std::move(host_option)))),
      token_(std::move(token)),
      max_body_(max_body) {}

std::string RequestGuard::token_cookie(int port) const {
  return cookie_name(port) + "=" + token_ + "; Path=/; HttpOnly; SameSite=Strict";
}

std::optional<Refusal> RequestGuard::check(const httplib::Request& req) const {
  if (auto r = check_host(req)) return r;
  const bool changes = req.method != "GET" && req.method != "HEAD";
  if (changes) {
    if (auto r = check_change(req)) return r;
  }
  return check_token(req);
}

std::optional<Refusal> RequestGuard::check_host(const httplib::Request& req) const {
  if (req.get_header_value_count("Host") != 1) {
    return Refusal{400, "the request needs exactly one Host header"};
  }
  const std::string value = req.get_header_value("Host");
  const auto hp = parse_host(value);
  const std::string local = bracketed(lower(req.local_addr));
  // A client on an IPv4 address of a dual-stack socket connects to ::ffff:a.b.c.d.
  const std::string mapped = "[::ffff:";
  const std::string local_v4 = local.rfind(mapped, 0) == 0
                                   ? local.substr(mapped.size(), local.size() - mapped.size() - 1)
                                   : "";
  const bool named = hp && (hp->name == "localhost" || hp->name == host_option_ ||
                            hp->name == local || (!local_v4.empty() && hp->name == local_v4));
  if (!named || hp->port != req.local_port) {
    return Refusal{421, "Host " + header_quoted(value) + " is not this server (http://" + local +
                            ":" + std::to_string(req.local_port) +
                            "/): requests for other names are refused (DNS rebinding)"};
  }
  return std::nullopt;
}

std::optional<Refusal> RequestGuard::check_token(const httplib::Request& req) const {
  const std::string given = req.has_param("token") ? req.get_param_value("token")
                                                   : cookie_value(req, cookie_name(req.local_port));
  if (given.empty()) {
    return Refusal{403,
                   "this server needs the token it printed when it started: open the address "
                   "from the output of heterodyne serve (.../?token=...)"};
  }
  if (!same_secret(given, token_)) {
    return Refusal{403,
                   "wrong token: open the address the running heterodyne serve printed when it "
                   "started"};
  }
  return std::nullopt;
}

std::optional<Refusal> RequestGuard::check_change(const httplib::Request& req) const {
  if (req.has_header("Sec-Fetch-Site")) {
    const std::string site = req.get_header_value("Sec-Fetch-Site");
    if (lower(site) != "same-origin") {
      return Refusal{403, "refused: a page of another site (Sec-Fetch-Site: " +
                              header_quoted(site) + ") may not change anything here"};
    }
  }
  if (req.has_header("Origin")) {
    const std::string origin = req.get_header_value("Origin");
    if (lower(origin) != "http://" + lower(req.get_header_value("Host"))) {
      return Refusal{403, "refused: a page of another origin (Origin: " + header_quoted(origin) +
                              ") may not change anything here"};
    }
  }
  if (req.has_header("Transfer-Encoding")) {
    return Refusal{411, "send the body with a Content-Length (Transfer-Encoding is refused)"};
  }
  if (!req.has_header("Content-Length")) {
    return Refusal{411, "a " + req.method + " needs a Content-Length"};
  }
  const std::string length = trim_ows(req.get_header_value("Content-Length"));
  const bool digits = !length.empty() && length.size() <= 18 &&
                      std::all_of(length.begin(), length.end(), [](char c) {
                        return std::isdigit(static_cast<unsigned char>(c));
                      });
  if (!digits) return Refusal{400, "Content-Length " + header_quoted(length) + " is not a number"};
  if (std::stoull(length) > max_body_) {
    return Refusal{413, "the request body is " + length + " bytes; the limit is " +
                            std::to_string(max_body_ >> 20) + " MiB"};
  }
  const std::string type = req.get_header_value("Content-Type");
  if (lower(trim_ows(type.substr(0, type.find(';')))) != "application/json") {
    return Refusal{
        415, "the body must be JSON (Content-Type: application/json), not " + header_quoted(type)};
  }
  return std::nullopt;
}

}  // namespace hd::serve
