// How much of a held-out text the calibration text already holds, in tokens: the check that
// makes recommend's proof a measurement on text the choice never saw. A byte comparison is not
// enough: the calibration text with one space added tokenizes into other chunks, and its proof
// would be measured on the calibration's own words.
#pragma once
#include <cstdint>
#include <vector>

namespace hd::run {

// Runs of this many tokens count as shared: long enough that two unrelated texts rarely share
// one (a quoted phrase, a licence header), short enough that a text shifted by a character,
// re-wrapped or cut elsewhere is still found. Chunks too short for it use half their length
// (at least 4): overlap_run.
inline constexpr int kOverlapRun = 16;
int overlap_run(int chunk);

struct ChunkOverlap {
  int chunk = 0;     // the held-out chunk's index
  double share = 0;  // of its tokens, the fraction inside a run the calibration holds too
};

struct Overlap {
  int run = kOverlapRun;
  std::vector<ChunkOverlap> chunks;  // those with a share above 0, largest first
  double share = 0;                  // of every held-out token, the fraction shared
};

// For each held-out chunk, the share of its tokens covered by runs of `run` tokens that also
// occur anywhere in `calibration` (every chunk of it, across chunk boundaries too).
Overlap held_out_overlap(const std::vector<std::vector<int32_t>>& calibration,
                         const std::vector<std::vector<int32_t>>& held_out, int run = kOverlapRun);

}  // namespace hd::run
