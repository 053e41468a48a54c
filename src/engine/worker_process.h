// A child process that speaks the worker protocol on a socket pair (its stdin and stdout),
// with its stderr kept: the last lines say why it died (ggml's GGML_ABORT message).
#pragma once
#include <sys/types.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hd::engine {

class WorkerProcess {
 public:
  // Starts `exe` with `args`. Throws RuntimeError when it cannot be started.
  WorkerProcess(const std::string& exe, const std::vector<std::string>& args);
  ~WorkerProcess();  // closes the connection, waits briefly, then kills
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  int fd() const { return fd_; }
  pid_t pid() const { return pid_; }
  // Kills the process (it hung) and reaps it.
  void kill();
  // After the connection broke: how the process ended ("was killed by signal 6 (Aborted)",
  // "exited with status 3") and the last line it wrote to stderr. Waits up to 5 s for it.
  struct Ending {
    std::string how, last_words;
  };
  Ending how_it_ended();

 private:
  void reap(int wait_ms);
  pid_t pid_ = -1;
  int fd_ = -1;
  int err_fd_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  std::thread err_reader_;
  std::mutex err_mutex_;
  std::string err_tail_;
};

}  // namespace hd::engine
