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

#include "common/record.h"

namespace hd::serve {

// One run of the queue as GET /api/runs sends it: a typed record (common/record.h), the web
// UI's RunInfo (web/src/records.ts).
struct RunState {
  int id = 0;
  // queued | running | done | failed | stopped (cancelled, or the server stopped; a file it
  // wrote is resumable, and `message` says with which command)
  std::string state = "queued";
  int chunk = 0, chunks = 0;     // progress, from diff's progress lines
  std::string message;           // the last progress line, or the error
  std::string experiment;        // its name under the experiments folder
  // From the last progress line that said them (run/chunk_loop.cpp): since the run started,
  // and what is left at the mean of its last chunks.
  std::optional<double> seconds_elapsed, seconds_left;
};

struct RunRequest {
  std::vector<std::string> args;  // after the binary's name: the kind's command, "--a", ...
  std::string experiment;         // the name
  std::string experiment_file;    // its .hdy, which the run creates
  // A pasted text serve wrote for this run, or empty. It is removed when the run ends without
  // an experiment file that reads it (stopped before it started, failed at once, or still
  // queued when the server stops); a run stopped while running keeps both, to be resumed.
  std::string owned_text;
};

class RunQueue {
 public:
  // Children get HETERODYNE_CACHE=`cache_dir`: what diff caches (B quantized from A, file
  // hashes) stays inside the experiments folder instead of the user's cache.
  RunQueue(std::string exe, std::string cache_dir);
  ~RunQueue();  // cancels what runs, waits for it
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  // False when limits::kMaxQueuedRuns runs already wait.
  bool has_room() const;
  int submit(RunRequest request);
  std::vector<RunState> list() const;
  std::optional<RunState> get(int id) const;
  bool cancel(int id);  // false: no such run, or already finished

 private:
  struct Job {
    RunState state;
    RunRequest request;
  };
  void work();
  void run_one(Job& job);
  void update(int id, const std::string& line);
  void finish(Job& job);  // under mu_: the text's fate, and the history's length
  size_t queued() const;  // under mu_

  std::string exe_;
  std::vector<std::string> env_;  // the children's environment
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // in order of submission; the oldest finished ones are dropped
  int next_id_ = 1;
  pid_t running_pid_ = -1;
  int running_id_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace hd::serve

namespace hd {

template <>
struct RecordTable<serve::RunState> {
  using R = serve::RunState;
  static constexpr const char* name = "RunInfo";
  static constexpr const char* doc =
      "One run of serve's queue (GET /api/runs, /api/runs/ID): src/serve/runs.h.";
  static constexpr auto fields = std::make_tuple(
      record_field("id", &R::id),
      record_field("state", &R::state,
                   "queued | running | done | failed | stopped (resumable: message gives the command)"),
      record_field("chunk", &R::chunk, "chunks stored so far"),
      record_field("chunks", &R::chunks, "chunks in the run (0 until it says)"),
      record_field("message", &R::message, "the last progress line, or the error"),
      record_field("experiment", &R::experiment, "its file's name under the experiments folder"),
      record_field("seconds_elapsed", &R::seconds_elapsed, "since the run started"),
      record_field("seconds_left", &R::seconds_left,
                   "what is left, at the mean time of its last chunks"));
};

}  // namespace hd
