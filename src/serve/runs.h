// The run queue of `serve`: diffs run one at a time, each as a child process of the heterodyne
// binary itself (`heterodyne diff ...`). A crash or abort in llama.cpp then ends that run, not
// the server; cancel is SIGTERM, on which diff stops after the current chunk and leaves a
// valid, resumable experiment file.
#pragma once
#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace hd::serve {

struct RunState {
  int id = 0;
  std::string state = "queued";  // queued | running | done | failed | cancelled
  int chunk = 0, chunks = 0;     // progress, from diff's progress lines
  std::string message;           // the last progress line, or the error
  std::string experiment;        // its name under the experiments folder
};

class RunQueue {
 public:
  explicit RunQueue(std::string exe);
  ~RunQueue();  // cancels what runs, waits for it
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  // `args` follow the binary's name: {"diff", "--a", ...}.
  int submit(std::vector<std::string> args, const std::string& experiment);
  std::vector<RunState> list() const;
  std::optional<RunState> get(int id) const;
  bool cancel(int id);  // false: no such run, or already finished

 private:
  struct Job {
    RunState state;
    std::vector<std::string> args;
  };
  void work();
  void run_one(Job& job);
  void update(int id, const std::string& line);

  std::string exe_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // every run ever submitted, in order
  int next_id_ = 1;
  pid_t running_pid_ = -1;
  int running_id_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace hd::serve
