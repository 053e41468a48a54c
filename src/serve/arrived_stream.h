// httplib's view of one connection whose request the waiting room (connections) read whole.
#pragma once
#include <httplib.h>

#include <string>

#include "serve/connections.h"
#include "serve/sockets.h"

namespace hd::serve {

// The request the waiting room already read, whole, then (only if httplib asks for more than
// was announced) the socket for one more second at most. Writing the answer has one deadline in
// all, so a client that reads a byte now and then does not hold a worker for long either.
class ArrivedStream final : public httplib::Stream {
 public:
  ArrivedStream(int fd, std::string request, const ConnectionLimits& limits);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  bool refill();

  int fd_;
  std::string buffer_;
  size_t pos_ = 0;
  sockets::Clock::time_point read_deadline_, write_deadline_;
  size_t budget_;
};

}  // namespace hd::serve
