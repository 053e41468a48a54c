#include "serve/connections.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "errors.h"

namespace hd::serve {
namespace {

using Clock = std::chrono::steady_clock;

int millis_until(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms, 0, 60000));
}

// Waits for `events` on `fd` until `deadline`; false on timeout, error or hang-up.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, millis_until(deadline));
    if (n > 0) return (p.revents & events) != 0;
    if (n == 0 || errno != EINTR) return false;
  }
}

// An answer for a connection turned away before httplib parses it: the same one-line JSON as
// every other refusal. Best effort: the socket's buffer is empty, so a short send fits.
void refuse(int fd, int status, const char* reason, const char* message) {
  const std::string body = std::string(R"({"error": ")") + message + "\"}";
  const std::string reply = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                            "\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// Closes after an answer. Closing a socket with unread bytes resets the connection, which can
// destroy the answer before the client reads it (a refused POST whose body was never read), so
// what is still arriving is read and dropped first, for a moment.
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

// httplib's view of one connection: the request the waiting room already read, whole, then
// (only if httplib asks for more than was announced) the socket for one more second at most.
// Writing the answer has one deadline in all, so a client that reads a byte now and then does
// not hold a worker for long either.
class ArrivedStream final : public httplib::Stream {
 public:
  ArrivedStream(int fd, std::string request, const ConnectionLimits& limits)
      : fd_(fd),
        buffer_(std::move(request)),
        read_deadline_(Clock::now() + std::chrono::seconds(1)),
        write_deadline_(Clock::now() + limits.write_deadline),
        budget_(limits.head_bytes) {}

  bool is_readable() const override {
    return pos_ < buffer_.size() || wait_for(fd_, POLLIN, read_deadline_);
  }
  bool is_writable() const override { return wait_for(fd_, POLLOUT, write_deadline_); }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == buffer_.size() && !refill()) return -1;
    const size_t n = std::min(size, buffer_.size() - pos_);
    std::memcpy(ptr, buffer_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    return ::send(fd_, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = address_text(a, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = address_text(a, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  bool refill() {
    if (budget_ == 0) return false;
    buffer_.resize(std::min<size_t>(4096, budget_));
    pos_ = 0;
    for (;;) {
      if (!wait_for(fd_, POLLIN, read_deadline_)) break;
      const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
      if (n > 0) {
        buffer_.resize(static_cast<size_t>(n));
        budget_ -= static_cast<size_t>(n);
        return true;
      }
      if (n == 0 || (errno != EINTR && errno != EAGAIN)) break;
    }
    buffer_.clear();
    return false;
  }

  int fd_;
  std::string buffer_;
  size_t pos_ = 0;
  Clock::time_point read_deadline_, write_deadline_;
  size_t budget_;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The header lines of a request head (its request line skipped): {name in lower case, value,
// offset of the line, length of the line with its CRLF}.
struct HeaderLine {
  std::string name, value;
  size_t at, length;
};
std::vector<HeaderLine> header_lines(const std::string& head) {
  std::vector<HeaderLine> out;
  size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const size_t start = at + 2, end = head.find("\r\n", start);
    if (end == std::string::npos || end == start) break;
    const std::string line = head.substr(start, end - start);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      const size_t v = line.find_first_not_of(" \t", colon + 1);
      const size_t e = line.find_last_not_of(" \t");
      out.push_back({lower(line.substr(0, colon)),
                     v == std::string::npos ? "" : line.substr(v, e - v + 1), start,
                     end + 2 - start});
    }
    at = end;
  }
  return out;
}

// How many body bytes to wait for: the first Content-Length when it is a number within
// `max`; 0 otherwise (the request guard refuses those without reading a body).
size_t announced_body(const std::vector<HeaderLine>& lines, size_t max) {
  for (const auto& h : lines) {
    if (h.name == "transfer-encoding") return 0;
  }
  for (const auto& h : lines) {
    if (h.name != "content-length") continue;
    if (h.value.empty() || h.value.size() > 18 ||
        !std::all_of(h.value.begin(), h.value.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return 0;
    const size_t n = std::stoull(h.value);
    return n <= max ? n : 0;
  }
  return 0;
}

// httplib runs whatever its task queue is given; ours only hands the socket to the waiting
// room, which is quick, so it runs on the accept thread itself.
class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// Complete requests waiting for one of a fixed number of threads; a full queue refuses.
class Workers {
 public:
  using Answer = std::function<void(int fd, std::string request)>;
  Workers(int n, size_t max_queued, Answer answer)
      : max_queued_(max_queued), answer_(std::move(answer)) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    for (auto& job : jobs_) ::close(job.first);
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  bool offer(int fd, std::string request) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ || jobs_.size() >= max_queued_) return false;
      jobs_.emplace_back(fd, std::move(request));
    }
    cv_.notify_one();
    return true;
  }

 private:
  void work() {
    for (;;) {
      std::pair<int, std::string> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      answer_(job.first, std::move(job.second));
    }
  }

  size_t max_queued_;
  Answer answer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<int, std::string>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
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
  front_ = std::make_unique<Front>(limits_, [this](int fd, std::string request) {
    answer(fd, std::move(request));
  });
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
  close_after_answer(fd);
}

}  // namespace hd::serve
