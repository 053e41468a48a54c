#include "engine/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/spawn.h"
#include "errors.h"

namespace hd::engine {

WorkerProcess::WorkerProcess(const std::string& exe, const std::vector<std::string>& args) {
  int sv[2];
  int err[2];
  // CLOEXEC on every end: a second worker must not inherit the first one's connection, or the
  // first would never see EOF when we close it.
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
      ::pipe2(err, O_CLOEXEC) != 0) {
    throw RuntimeError(std::string("cannot make a connection for a worker: ") +
                       std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);  // dup2 clears CLOEXEC on the copies
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  const int rc = spawn_llama_process(pid_, exe, args, &fa);
  posix_spawn_file_actions_destroy(&fa);
  ::close(sv[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(sv[0]);
    ::close(err[0]);
    throw RuntimeError("cannot start the worker '" + exe + "': " + std::strerror(rc));
  }
  fd_ = sv[0];
  err_fd_ = err[0];
  err_reader_ = std::thread([this] {
    // HETERODYNE_LLAMA_LOG=1 shows llama.cpp's log; the worker's goes through here.
    static const bool echo_log = std::getenv("HETERODYNE_LLAMA_LOG") != nullptr;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(err_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (echo_log) std::fwrite(buf, 1, static_cast<size_t>(n), stderr);
      std::lock_guard lock(err_mutex_);
      err_tail_.append(buf, static_cast<size_t>(n));
      if (err_tail_.size() > 16384) err_tail_.erase(0, err_tail_.size() - 8192);
    }
  });
}

WorkerProcess::~WorkerProcess() {
  if (fd_ >= 0) ::close(fd_);  // the worker reads EOF and exits
  reap(2000);
  if (!reaped_) kill();
  if (err_reader_.joinable()) err_reader_.join();
  if (err_fd_ >= 0) ::close(err_fd_);
}

void WorkerProcess::reap(int wait_ms) {
  if (reaped_ || pid_ <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) {
      reaped_ = true;
      return;
    }
    if (std::chrono::steady_clock::now() >= until) return;
    ::usleep(10000);
  }
}

void WorkerProcess::kill() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap(10000);
}

WorkerProcess::Ending WorkerProcess::how_it_ended() {
  reap(5000);
  std::string how;
  if (!reaped_) {
    how = "is still running but closed its connection";
  } else if (WIFSIGNALED(status_)) {
    how = "was killed by signal " + std::to_string(WTERMSIG(status_)) + " (" +
          strsignal(WTERMSIG(status_)) + ")";
  } else if (WIFEXITED(status_)) {
    how = "exited with status " + std::to_string(WEXITSTATUS(status_));
  }
  if (reaped_ && err_reader_.joinable()) err_reader_.join();  // its stderr is complete now
  std::lock_guard lock(err_mutex_);
  std::string last;
  size_t end = err_tail_.find_last_not_of(" \n");
  if (end != std::string::npos) {
    size_t begin = err_tail_.rfind('\n', end);
    last = err_tail_.substr(begin == std::string::npos ? 0 : begin + 1,
                            end + 1 - (begin == std::string::npos ? 0 : begin + 1));
  }
  return {how, last};
}

}  // namespace hd::engine
