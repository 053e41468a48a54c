// How connections reach serve's routes. cpp-httplib 0.11.4 on its own gives each accepted
// socket to one of 8 threads, which waits up to 5 s for it to speak, behind a listen backlog of
// 5: 1,000 idle connections kept every other client out for 30 s. GuardedServer keeps httplib's
// parser and routes and replaces that path:
//   - the kernel keeps connections that have sent nothing out of accept() (TCP_DEFER_ACCEPT),
//     and the backlog is raised with a second listen();
//   - an accepted connection waits in one epoll thread, holding no worker, until its whole
//     request (head, and body by its Content-Length) has arrived: at most `waiting` such
//     connections and `waiting_bytes` between them (the oldest is dropped to admit a new one),
//     each for at most `arrival_deadline`;
//   - `workers` threads answer complete requests, one request per connection, so no worker
//     waits for a client to send; when `queued` requests already wait for a worker, the next
//     one gets 503 at once. Writing an answer has `write_deadline` in all.
#pragma once
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>

#include "serve/limits.h"

namespace hd::serve {

struct ConnectionLimits {
  int workers = 8;
  size_t queued = 64;
  size_t waiting = 256;  // also keeps descriptors far below select()'s FD_SETSIZE, which httplib checks
  size_t waiting_bytes = size_t{64} << 20;
  size_t head_bytes = 16384;                  // request line and headers
  size_t body_bytes = limits::kMaxBodyBytes;  // a longer Content-Length is refused unread
  std::chrono::milliseconds arrival_deadline{10000};
  std::chrono::milliseconds write_deadline{30000};
  int listen_backlog = 1024;
  int defer_accept_seconds = 2;
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(const ConnectionLimits& limits = {});
  ~GuardedServer() override;
  GuardedServer(const GuardedServer&) = delete;
  GuardedServer& operator=(const GuardedServer&) = delete;

  // Call after bind_to_port / bind_to_any_port: deferred accept and the deeper backlog on the
  // listening socket. Throws RuntimeError when the socket refuses them.
  void harden_listener();

 private:
  class Front;
  // httplib calls this (on its accept thread) for every accepted socket.
  bool process_and_close_socket(socket_t sock) override;
  void answer(int fd, std::string request);  // on a worker: one whole request, then close

  ConnectionLimits limits_;
  std::unique_ptr<Front> front_;
};

}  // namespace hd::serve
