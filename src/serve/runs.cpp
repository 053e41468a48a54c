#include "serve/runs.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "serve/limits.h"

extern char** environ;

namespace hd::serve {
namespace {

void remove_file(const std::string& path) {
  std::error_code ec;
  if (!path.empty()) std::filesystem::remove(path, ec);
}

bool finished(const RunState& s) { return s.state != "queued" && s.state != "running"; }

}  // namespace

RunQueue::RunQueue(std::string exe, std::string cache_dir) : exe_(std::move(exe)) {
  const std::string cache_var = "HETERODYNE_CACHE=", progress_var = "HETERODYNE_PROGRESS=";
  for (char** e = environ; *e; ++e) {
    const std::string var(*e);
    if (var.rfind(cache_var, 0) != 0 && var.rfind(progress_var, 0) != 0) env_.push_back(var);
  }
  env_.push_back(cache_var + cache_dir);
  env_.push_back(progress_var + "json");  // read by update(), never parsed from the text
  worker_ = std::thread([this] { work(); });
}

RunQueue::~RunQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (running_pid_ > 0) ::kill(running_pid_, SIGTERM);
    // Runs still waiting are lost with the server: so is the text written for them.
    for (Job& j : jobs_) {
      if (j.state.state == "queued") remove_file(j.request.owned_text);
    }
  }
  cv_.notify_all();
  worker_.join();
}

size_t RunQueue::queued() const {
  size_t n = 0;
  for (const Job& j : jobs_) n += j.state.state == "queued" ? 1 : 0;
  return n;
}

bool RunQueue::has_room() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued() < limits::kMaxQueuedRuns;
}

int RunQueue::submit(RunRequest request) {
  std::lock_guard<std::mutex> lock(mu_);
  Job job;
  job.state.id = next_id_++;
  job.state.experiment = request.experiment;
  job.request = std::move(request);
  jobs_.push_back(std::move(job));
  cv_.notify_all();
  return jobs_.back().state.id;
}

void RunQueue::finish(Job& job) {
  std::error_code ec;
  if (!std::filesystem::exists(job.request.experiment_file, ec)) {
    remove_file(job.request.owned_text);
  }
  // Only from the front: the running job is referenced from outside the lock, and erasing at
  // the ends of a deque leaves references to the other elements valid.
  size_t done = 0;
  for (const Job& j : jobs_) done += finished(j.state) ? 1 : 0;
  while (done > limits::kMaxFinishedRunsListed && finished(jobs_.front().state)) {
    jobs_.pop_front();
    --done;
  }
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
      j.state.state = "stopped";
      j.state.message = "cancelled before it started: nothing was written";
      finish(j);
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

// The child reports progress as JSON lines (common/progress.h): chunk events give the counts,
// every event's text is the message. Other lines (an error) are the message as they are.
struct ChildLine {
  std::string message;
  std::optional<std::pair<int, int>> counts;  // chunks done, of
  std::optional<double> elapsed, left;
};
static ChildLine read_child_line(const std::string& line) {
  ChildLine out{line, std::nullopt, std::nullopt, std::nullopt};
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("event") || !j.contains("text") || !j["text"].is_string())
    return out;
  out.message = j["text"].get<std::string>();
  if (j.contains("done") && j.contains("total") && j["done"].is_number_integer() &&
      j["total"].is_number_integer())
    out.counts = {j["done"].get<int>(), j["total"].get<int>()};
  const auto seconds = [&](const char* key) -> std::optional<double> {
    if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
    const double v = j[key].get<double>();
    return std::isfinite(v) && v >= 0 ? std::optional<double>(v) : std::nullopt;
  };
  out.elapsed = seconds("seconds_elapsed");
  out.left = seconds("seconds_left");
  return out;
}

void RunQueue::update(int id, const std::string& line) {
  const ChildLine l = read_child_line(line);
  std::lock_guard<std::mutex> lock(mu_);
  for (Job& j : jobs_) {
    if (j.state.id != id) continue;
    if (l.counts) std::tie(j.state.chunk, j.state.chunks) = *l.counts;
    if (l.elapsed) j.state.seconds_elapsed = l.elapsed;
    if (l.left) j.state.seconds_left = l.left;
    if (j.state.message.rfind("cancelling", 0) != 0) j.state.message = l.message;
  }
}

// `strings` as the null-terminated array of pointers posix_spawn takes (they stay owned there).
static std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Reads the child's stderr from `fd` to its end, handing each non-empty line to `on_line`;
// returns the message of the last one.
static std::string follow_child(int fd, const std::function<void(const std::string&)>& on_line) {
  std::string last, buffer;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fd, chunk, sizeof chunk)) > 0) {
    buffer.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      const std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (line.empty()) continue;
      on_line(line);
      last = read_child_line(line).message;
    }
  }
  return last;
}

void RunQueue::run_one(Job& job) {
  const int id = job.state.id;
  int pipe_fd[2];
  if (::pipe2(pipe_fd, O_CLOEXEC) != 0) {
    std::lock_guard<std::mutex> lock(mu_);
    job.state.state = "failed";
    job.state.message = "cannot create a pipe";
    finish(job);
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  // Nothing else of the server's (client sockets above all) stays open in the child.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  std::vector<std::string> argv_s = {exe_};
  argv_s.insert(argv_s.end(), job.request.args.begin(), job.request.args.end());
  std::vector<char*> argv = c_strings(argv_s), envp = c_strings(env_);
  pid_t pid = -1;
  bool stopped = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped = stopping_;
    if (!stopped) {
      if (posix_spawn(&pid, exe_.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0)
        pid = -1;
      running_pid_ = pid;
      running_id_ = id;
    }
  }
  posix_spawn_file_actions_destroy(&actions);
  if (stopped) {
    ::close(pipe_fd[0]);
    ::close(pipe_fd[1]);
    std::lock_guard<std::mutex> lock(mu_);
    job.state.state = "stopped";
    job.state.message = "the server stopped before the run started: nothing was written";
    finish(job);
    return;
  }
  ::close(pipe_fd[1]);
  std::string last;
  if (pid > 0) last = follow_child(pipe_fd[0], [&](const std::string& line) { update(id, line); });
  ::close(pipe_fd[0]);
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  std::lock_guard<std::mutex> lock(mu_);
  running_pid_ = -1;
  running_id_ = 0;
  const int code = pid <= 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  job.state.seconds_left.reset();  // nothing is left of a run that ended, whichever way
  if (code == 0) {
    job.state.state = "done";
    job.state.chunk = job.state.chunks;
  } else if (code == 130) {
    // Stopped (cancel, or the server's stop): the file keeps its finished chunks, and the
    // message is the command that finishes it, run in the experiments folder.
    job.state.state = "stopped";
    std::error_code ec;
    const std::string command = job.request.args.empty() ? "diff" : job.request.args.front();
    job.state.message =
        std::filesystem::exists(job.request.experiment_file, ec)
            ? fmt::format("stopped after {} of {} chunks; to finish it: heterodyne {} --resume "
                          "{}.hdy",
                          job.state.chunk, job.state.chunks, command, job.state.experiment)
            : "stopped before the run wrote an experiment file";
  } else {
    job.state.state = "failed";
    const std::string prefix = "heterodyne: error: ";
    job.state.message = pid <= 0 ? "could not start " + exe_
                        : last.rfind(prefix, 0) == 0
                            ? last.substr(prefix.size())
                            : "the run ended with status " + std::to_string(code) +
                                  (last.empty() ? "" : ": " + last);
  }
  finish(job);
}

}  // namespace hd::serve
