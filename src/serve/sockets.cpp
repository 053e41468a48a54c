#include "serve/sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace hd::serve::sockets {

int millis_until(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms, 0, 60000));
}

bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, millis_until(deadline));
    if (n > 0) return (p.revents & events) != 0;
    if (n == 0 || errno != EINTR) return false;
  }
}

void refuse(int fd, int status, const char* reason, const char* message) {
  const std::string body = std::string(R"({"error": ")") + message + "\"}";
  const std::string reply =
      "HTTP/1.1 " + std::to_string(status) + " " + reason +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + body;
  (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void close_after_answer(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto until = Clock::now() + std::chrono::milliseconds(200);
  char sink[4096];
  size_t drained = 0;
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) > 0) {
    while (drained < (size_t{1} << 20) && wait_for(fd, POLLIN, until)) {
      const ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
      if (n <= 0) break;
      drained += static_cast<size_t>(n);
    }
  }
  ::close(fd);
}

std::string address_text(const sockaddr_storage& a, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  return text;
}

}  // namespace hd::serve::sockets
