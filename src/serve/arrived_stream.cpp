#include "serve/arrived_stream.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hd::serve {

using sockets::Clock;
using sockets::wait_for;

ArrivedStream::ArrivedStream(int fd, std::string request, const ConnectionLimits& limits)
    : fd_(fd),
      buffer_(std::move(request)),
      read_deadline_(Clock::now() + std::chrono::seconds(1)),
      write_deadline_(Clock::now() + limits.write_deadline),
      budget_(limits.head_bytes) {}

bool ArrivedStream::is_readable() const {
  return pos_ < buffer_.size() || wait_for(fd_, POLLIN, read_deadline_);
}

bool ArrivedStream::is_writable() const { return wait_for(fd_, POLLOUT, write_deadline_); }

ssize_t ArrivedStream::read(char* ptr, size_t size) {
  if (pos_ == buffer_.size() && !refill()) return -1;
  const size_t n = std::min(size, buffer_.size() - pos_);
  std::memcpy(ptr, buffer_.data() + pos_, n);
  pos_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t ArrivedStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  return ::send(fd_, ptr, size, MSG_NOSIGNAL);
}

void ArrivedStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    ip = sockets::address_text(a, port);
  }
}

void ArrivedStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    ip = sockets::address_text(a, port);
  }
}

bool ArrivedStream::refill() {
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

}  // namespace hd::serve
