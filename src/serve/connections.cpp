#include "serve/connections.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "errors.h"
#include "serve/arrived_stream.h"
#include "serve/request_head.h"
#include "serve/sockets.h"
#include "serve/workers.h"

namespace hd::serve {
namespace {

using sockets::Clock;
using sockets::millis_until;
using sockets::refuse;

// httplib runs whatever its task queue is given; ours only hands the socket to the waiting
// room, which is quick, so it runs on the accept thread itself.
class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

}  // namespace

// Connections still sending their request, watched by one epoll thread.
class GuardedServer::Front {
 public:
  Front(const ConnectionLimits& limits, Workers::Answer answer)
      : limits_(limits), workers_(limits.workers, limits.queued, std::move(answer)) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_ < 0 || wake_ < 0) throw RuntimeError("cannot create the server's epoll set");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    thread_ = std::thread([this] { loop(); });
  }

  ~Front() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    const uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
    thread_.join();
    for (auto& g : guests_) ::close(g.fd);
    ::close(wake_);
    ::close(epoll_);
  }
  Front(const Front&) = delete;
  Front& operator=(const Front&) = delete;

  void admit(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    if (guests_.size() >= limits_.waiting) drop(guests_.begin());  // the one waiting longest
    guests_.push_back({fd, Clock::now() + limits_.arrival_deadline, {}, 0, 0});
    by_fd_[fd] = std::prev(guests_.end());
    epoll_event ev{};
    // Edge-triggered: each arrival of bytes is one event, and take() reads all there is.
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) drop(std::prev(guests_.end()));
  }

 private:
  struct Guest {
    int fd;
    Clock::time_point deadline;
    std::string bytes;    // what arrived so far
    size_t head_end = 0;  // past the blank line, once it arrived
    size_t want = 0;      // head and announced body, once the head is known
  };
  using GuestIt = std::list<Guest>::iterator;

  void loop() {
    std::vector<epoll_event> events(64);
    for (;;) {
      int timeout = 1000;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        if (!guests_.empty()) timeout = std::min(timeout, millis_until(guests_.front().deadline));
      }
      const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), timeout);
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      for (int i = 0; i < n; ++i) {
        const auto it = by_fd_.find(events[static_cast<size_t>(i)].data.fd);
        if (it != by_fd_.end()) take(it->second);
      }
      // Guests arrive in order and share one deadline length: the front expires first.
      while (!guests_.empty() && guests_.front().deadline <= Clock::now()) drop(guests_.begin());
    }
  }

  // Reads what has arrived; a complete request goes to a worker.
  void take(GuestIt g) {
    char chunk[16384];
    for (;;) {
      const size_t limit = g->head_end ? g->want : limits_.head_bytes;
      if (g->bytes.size() >= limit) {
        refuse(g->fd, 431, "Request Header Fields Too Large",
               "the request line and headers are too long");
        return drop(g);
      }
      const size_t room = std::min(sizeof chunk, limit - g->bytes.size());
      if (!make_room(g, room)) return drop(g);
      const ssize_t n = ::recv(g->fd, chunk, room, MSG_DONTWAIT);
      if (n > 0) {
        const size_t from = g->bytes.size() >= 3 ? g->bytes.size() - 3 : 0;
        g->bytes.append(chunk, static_cast<size_t>(n));
        buffered_ += static_cast<size_t>(n);
        if (!g->head_end) {
          const size_t blank = g->bytes.find("\r\n\r\n", from);
          if (blank != std::string::npos) read_head(*g, blank + 4);
        }
        if (g->head_end && g->bytes.size() >= g->want) return hand_over(g);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      return drop(g);  // closed or failed before its request was complete
    }
  }

  // The head is complete: how much body to wait for. A client that sent Expect: 100-continue
  // waits for our word before it sends the body: it gets it here, and httplib, which would
  // say it again, never sees the header.
  void read_head(Guest& g, size_t head_end) {
    g.head_end = head_end;
    const auto lines = header_lines(g.bytes.substr(0, head_end));
    const size_t body = announced_body(lines, limits_.body_bytes);
    bool expects = false;
    for (auto h = lines.rbegin(); h != lines.rend(); ++h) {  // from the end: offsets stay valid
      if (h->name != "expect") continue;
      g.bytes.erase(h->at, h->length);
      g.head_end -= h->length;
      buffered_ -= h->length;
      expects = true;
    }
    g.want = g.head_end + body;
    if (expects && g.bytes.size() < g.want) {
      const char* go_on = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)!::send(g.fd, go_on, std::strlen(go_on), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }

  // Keeps what all guests hold under limits_.waiting_bytes by dropping the oldest others.
  bool make_room(GuestIt g, size_t more) {
    while (buffered_ + more > limits_.waiting_bytes) {
      if (guests_.begin() == g) return false;
      drop(guests_.begin());
    }
    return true;
  }

  void hand_over(GuestIt g) {
    const int fd = g->fd;
    std::string request = std::move(g->bytes);
    buffered_ -= request.size();
    g->bytes.clear();
    forget(g);
    if (!workers_.offer(fd, std::move(request))) {
      // The whole request was read, so closing at once resets nothing (and keeps this thread,
      // which every waiting connection needs, from lingering).
      refuse(fd, 503, "Service Unavailable", "the server is busy: try again in a moment");
      ::close(fd);
    }
  }

  void forget(GuestIt g) {
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, g->fd, nullptr);
    buffered_ -= g->bytes.size();
    by_fd_.erase(g->fd);
    guests_.erase(g);
  }

  void drop(GuestIt g) {
    const int fd = g->fd;
    forget(g);
    ::close(fd);
  }

  const ConnectionLimits& limits_;
  Workers workers_;
  int epoll_ = -1, wake_ = -1;
  std::mutex mu_;
  std::list<Guest> guests_;  // in arrival order
  std::unordered_map<int, GuestIt> by_fd_;
  size_t buffered_ = 0;  // bytes all guests hold
  bool stopping_ = false;
  std::thread thread_;
};

GuardedServer::GuardedServer(const ConnectionLimits& limits) : limits_(limits) {
  new_task_queue = [] { return new InlineQueue; };
  front_ = std::make_unique<Front>(
      limits_, [this](int fd, std::string request) { answer(fd, std::move(request)); });
}

// The front's threads call into httplib's parser: they stop before the Server they use goes.
GuardedServer::~GuardedServer() { front_.reset(); }

void GuardedServer::harden_listener() {
  const int fd = svr_sock_;
  const int seconds = limits_.defer_accept_seconds;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds) != 0 ||
      ::listen(fd, limits_.listen_backlog) != 0) {
    throw RuntimeError(std::string("cannot configure the listening socket: ") +
                       std::strerror(errno));
  }
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  // httplib accepts without SOCK_CLOEXEC: a diff child must not hold a client's connection open.
  ::fcntl(sock, F_SETFD, FD_CLOEXEC);
  // An answer is written in a few pieces; Nagle's algorithm would hold the last one back for
  // the peer's delayed ACK (40 ms on loopback).
  const int yes = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  front_->admit(sock);
  return true;
}

void GuardedServer::answer(int fd, std::string request) {
  ArrivedStream stream(fd, std::move(request), limits_);
  bool closed = false;
  process_request(stream, /*close_connection=*/true, closed, nullptr);
  sockets::close_after_answer(fd);
}

}  // namespace hd::serve
