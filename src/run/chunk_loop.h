// The one chunk loop of every chunked run (diff, sweep, floor): runs the units not yet stored
// in order (a diff's or sweep's chunks, a floor's groups), stops cleanly after the unit in
// flight when asked (SIGINT, SIGTERM), publishes the file with its first unit, reports
// structured progress, and seals the file when every unit is there. A failure mid-run loses
// only the unit in flight; every message says how to finish (`heterodyne <command> --resume
// FILE`).
#pragma once
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "common/progress.h"
#include "common/stop.h"  // the loop stops after the chunk in flight when asked

namespace hd::store {
class Experiment;
}

namespace hd::run {

// How a run ended: the chunks still missing (0 when complete), and whether the file holds any
// (a run stopped before its first chunk leaves the output path as it was).
struct RunEnd {
  int missing = 0;
  bool written = true;
  std::string unit = "chunk";  // what `missing` counts, as the messages name it
};

// What one chunk reports when it is stored.
struct ChunkDone {
  double seconds = 0;
  double mean_kl = NAN;  // A vs B, where the run has one number per chunk
};

struct ChunkLoop {
  std::string command;         // "diff", "sweep", "floor": what --resume is spelled with
  std::string unit = "chunk";  // what the messages call one unit ("group" for floor)
  int total = 0;
  std::set<int> done;  // chunks already stored
  // Which of the `total` units this run computes (all when unset): a shard's (run/shard.h).
  std::function<bool(int)> owns;
  // Computes chunk c and stores it in the file (one transaction); `finished` chunks are stored.
  std::function<ChunkDone(int c, int finished)> run_chunk;
  // Called once every chunk is stored, before the file is sealed (a summary, say).
  std::function<void()> before_seal;
};

RunEnd run_chunk_loop(store::Experiment& e, const ChunkLoop& loop, const ProgressFn& progress);

// When a stored run was begun and finished: "2026-12-01T12:00:00Z".
std::string now_utc();

}  // namespace hd::run
