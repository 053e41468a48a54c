#include "serve/runs.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <regex>

extern char** environ;

namespace hd::serve {

RunQueue::RunQueue(std::string exe) : exe_(std::move(exe)), worker_([this] { work(); }) {}

RunQueue::~RunQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (running_pid_ > 0) ::kill(running_pid_, SIGTERM);
  }
  cv_.notify_all();
  worker_.join();
}

int RunQueue::submit(std::vector<std::string> args, const std::string& experiment) {
  std::lock_guard<std::mutex> lock(mu_);
  Job job;
  job.state.id = next_id_++;
  job.state.experiment = experiment;
  job.args = std::move(args);
  jobs_.push_back(std::move(job));
  cv_.notify_all();
  return jobs_.back().state.id;
}

std::vector<RunState> RunQueue::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RunState> out;
  for (const Job& j : jobs_) out.push_back(j.state);
  return out;
}

std::optional<RunState> RunQueue::get(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Job& j : jobs_) {
    if (j.state.id == id) return j.state;
  }
  return std::nullopt;
}

bool RunQueue::cancel(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Job& j : jobs_) {
    if (j.state.id != id) continue;
    if (j.state.state == "queued") {
      j.state.state = "cancelled";
      j.state.message = "cancelled before it started";
      return true;
    }
    if (j.state.state == "running" && running_id_ == id && running_pid_ > 0) {
      ::kill(running_pid_, SIGTERM);  // diff finishes the chunk it is on, then exits 130
      j.state.message = "cancelling after the current chunk";
      return true;
    }
    return false;
  }
  return false;
}

void RunQueue::work() {
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        if (stopping_) return true;
        for (Job& j : jobs_) {
          if (j.state.state == "queued") return true;
        }
        return false;
      });
      if (stopping_) return;
      for (Job& j : jobs_) {
        if (j.state.state == "queued") {
          job = &j;  // deque: references stay valid as others are appended
          break;
        }
      }
      job->state.state = "running";
    }
    run_one(*job);
  }
}

// "chunk 3/8 ..." gives the progress; any line is the message.
void RunQueue::update(int id, const std::string& line) {
  static const std::regex kChunk(R"(^chunk (\d+)/(\d+))");
  std::smatch m;
  std::lock_guard<std::mutex> lock(mu_);
  for (Job& j : jobs_) {
    if (j.state.id != id) continue;
    if (std::regex_search(line, m, kChunk)) {
      j.state.chunk = std::stoi(m[1]);
      j.state.chunks = std::stoi(m[2]);
    }
    if (j.state.message.rfind("cancelling", 0) != 0) j.state.message = line;
  }
}

void RunQueue::run_one(Job& job) {
  const int id = job.state.id;
  int pipe_fd[2];
  if (::pipe2(pipe_fd, O_CLOEXEC) != 0) {
    std::lock_guard<std::mutex> lock(mu_);
    job.state.state = "failed";
    job.state.message = "cannot create a pipe";
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> argv_s = {exe_};
  argv_s.insert(argv_s.end(), job.args.begin(), job.args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    if (posix_spawn(&pid, exe_.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid = -1;
    running_pid_ = pid;
    running_id_ = id;
  }
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fd[1]);
  std::string last, buffer;
  if (pid > 0) {
    char chunk[4096];
    ssize_t n;
    while ((n = ::read(pipe_fd[0], chunk, sizeof chunk)) > 0) {
      buffer.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buffer.find('\n')) != std::string::npos) {
        last = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (!last.empty()) update(id, last);
      }
    }
  }
  ::close(pipe_fd[0]);
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  std::lock_guard<std::mutex> lock(mu_);
  running_pid_ = -1;
  running_id_ = 0;
  const int code = pid <= 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code == 0) {
    job.state.state = "done";
    job.state.chunk = job.state.chunks;
  } else if (code == 130) {
    job.state.state = "cancelled";
    job.state.message = "cancelled: the experiment file keeps the finished chunks (diff --resume)";
  } else {
    job.state.state = "failed";
    const std::string prefix = "heterodyne: error: ";
    job.state.message = pid <= 0 ? "could not start " + exe_
                        : last.rfind(prefix, 0) == 0
                            ? last.substr(prefix.size())
                            : "the run ended with status " + std::to_string(code) +
                                  (last.empty() ? "" : ": " + last);
  }
}

}  // namespace hd::serve
