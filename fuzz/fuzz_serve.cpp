// libFuzzer target: serve's HTTP handling. The server runs in this process on a loopback port
// (models and experiments in empty temporary folders); each input is sent as raw bytes on a new
// connection and the response read until the server closes or goes quiet (50 ms for the first
// byte, 5 ms after it: an incomplete request would otherwise hold the connection open). The
// socket is not half-closed, which httplib treats as a dropped peer.
// The server refuses a Host that is not its own and requests without its token, so that inputs
// reach the routes, "{port}" in an input becomes the server's port (the seeds send
// "Host: 127.0.0.1:{port}") and the token is "fuzz" ("?token=fuzz").
// A crash, a sanitizer report or a hang in the server is a finding.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

#include "serve/server.h"

namespace {

int start_server() {
  static std::atomic<int> port{0};
  // Detached: a joinable std::thread destroyed at exit would abort the fuzzer's clean exit.
  std::thread server([] {
    const std::string root = "/tmp/heterodyne-fuzz-serve-" + std::to_string(getpid());
    std::filesystem::create_directories(root + "/models");
    std::filesystem::create_directories(root + "/experiments");
    hd::serve::ServeOptions o;
    o.models = root + "/models";
    o.experiments = root + "/experiments";
    o.port = 0;
    o.exe = "/bin/false";  // a run the fuzzer starts fails at once
    o.token = "fuzz";
    hd::serve::serve_until_stopped(o, [](const std::string& url) {
      port = std::stoi(url.substr(url.rfind(':') + 1));
    });
  });
  server.detach();
  while (port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return port;
}

// The input with every "{port}" replaced by the server's port.
std::string with_port(const uint8_t* data, size_t size, int port) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string placeholder = "{port}", value = std::to_string(port);
  for (size_t at = bytes.find(placeholder); at != std::string::npos;
       at = bytes.find(placeholder, at + value.size())) {
    bytes.replace(at, placeholder.size(), value);
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int port = start_server();
  const std::string bytes = with_port(data, size, port);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval first{0, 50000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &first, sizeof first);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    (void)!write(fd, bytes.data(), bytes.size());
    char buf[4096];
    if (read(fd, buf, sizeof buf) > 0) {
      timeval quiet{0, 5000};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &quiet, sizeof quiet);
      while (read(fd, buf, sizeof buf) > 0) {
      }
    }
  }
  close(fd);
  return 0;
}
