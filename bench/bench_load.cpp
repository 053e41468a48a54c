// A busy machine (issue 45): the default diff of a small pair (tiny-llama f16 vs its Q4_K_M, 8
// chunks of 128, both floors) with 0, 1 or 2 other processes each holding a core (a busy loop,
// started before and stopped after each run), at the default threads, -t 2 and -t 1. What a user
// meets on a shared machine: threads that wait at every barrier for a core another process holds.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "support.h"

namespace hd::bench {
namespace {

// `n` processes that each keep a core busy until stopped.
class BusyLoops {
 public:
  explicit BusyLoops(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~BusyLoops() {
    for (pid_t p : pids_) kill(p, SIGKILL);
    for (pid_t p : pids_) waitpid(p, nullptr, 0);
  }

 private:
  std::vector<pid_t> pids_;
};

// range(0): busy processes beside the run; range(1): -t (0: heterodyne's default).
void BM_DiffUnderLoad(benchmark::State& state) {
  const Setup& s = setup();
  const int busy = static_cast<int>(state.range(0)), threads = static_cast<int>(state.range(1));
  std::vector<std::string> args = {s.bin,        "diff",  "--a",          s.small,
                                   "--b-quant",  "Q4_K_M", "--text-file", s.text,
                                   "--chunk",    "128",   "--max-chunks", "8",
                                   "-o",         s.dir + "/load.hdy",     "--force"};
  if (threads > 0) args.insert(args.end(), {"-t", std::to_string(threads)});
  bench::run(args);  // B quantized and cached before anything is timed
  for (auto _ : state) {
    BusyLoops loops(busy);
    bench::run(args);
  }
}

BENCHMARK(BM_DiffUnderLoad)
    ->ArgsProduct({{0, 1, 2}, {0, 2, 1}})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->Repetitions(3);

}  // namespace

void print_load_ratios(const std::map<std::string, double>& by_name) {
  const auto at = [&](int busy, int threads) {
    const auto it = by_name.find("BM_DiffUnderLoad/" + std::to_string(busy) + "/" +
                                 std::to_string(threads) + "/iterations:1/repeats:3_median");
    return it == by_name.end() ? -1.0 : it->second;
  };
  for (int busy = 0; busy <= 2; ++busy)
    for (int t : {0, 1, 2})
      if (at(busy, t) < 0) return;  // a filtered run: no table
  std::printf("  a busy machine (tiny-llama f16 vs Q4_K_M, 8 x 128; medians of 3, seconds):\n");
  std::printf("    busy cores   default     -t 2     -t 1   default / the faster   target <= 1.10\n");
  for (int busy = 0; busy <= 2; ++busy) {
    std::printf("    %10d %9.2f %8.2f %8.2f %22.3f\n", busy, at(busy, 0), at(busy, 2),
                at(busy, 1), at(busy, 0) / std::min(at(busy, 1), at(busy, 2)));
  }
}

}  // namespace hd::bench
