// What a request must show before any route sees it. Loopback is no boundary against the
// browser: any page the user visits can send requests to 127.0.0.1, and through DNS rebinding
// (its own name resolving to 127.0.0.1) read the answers. So every request needs
//   - a Host that names this server: `localhost`, the address the client connected to, or the
//     --host given, with the port it listens on (a rebinding page sends its own name);
//   - the token made at start, from `?token=` or from the cookie the page gets with it;
// and a request that changes something (any method but GET and HEAD) needs in addition
//   - to come from this origin: an Origin, when sent, of http://<Host>, and Sec-Fetch-Site, when
//     sent, same-origin;
//   - Content-Type application/json, which a page cannot send to another origin without a
//     CORS preflight that this server never grants;
//   - a Content-Length within the body limit (no chunked or unterminated bodies).
#pragma once
#include <httplib.h>

#include <optional>
#include <string>

namespace hd::serve {

struct Refusal {
  int status = 400;
  std::string message;  // one line
};

class RequestGuard {
 public:
  RequestGuard(std::string host_option, std::string token, size_t max_body);

  std::optional<Refusal> check(const httplib::Request& req) const;
  // The Set-Cookie value that lets the page's own requests carry the token (HttpOnly,
  // SameSite=Strict, so no other site's page sends it).
  std::string token_cookie(int port) const;

 private:
  std::optional<Refusal> check_host(const httplib::Request& req) const;
  std::optional<Refusal> check_token(const httplib::Request& req) const;
  std::optional<Refusal> check_change(const httplib::Request& req) const;

  std::string host_option_;  // lower case, bracketed when IPv6
  std::string token_;
  size_t max_body_;
};

// 128 random bits as 32 hex digits, from the kernel's generator.
std::string new_token();

}  // namespace hd::serve
