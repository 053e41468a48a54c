// A sweep's stored rows (docs/experiment-format.md, kind `sweep`): every scored position's KL
// and NLL per combination and for the floor in `sweep_positions`, each chunk's top-1 changes in
// `sweep_flips`, and the chunk's hash in meta `sweep_rows_sha256/<c>`, all written in one
// transaction.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hd::store {

// One combination's (or the floor's) rows of one chunk, scored against A's logits.
struct SweepArmRows {
  std::vector<double> kl, nll;  // at every scored position, in order
  int64_t flips = 0;            // scored positions whose top-1 token is not A's
};

// Everything a sweep stores of one chunk.
struct SweepChunkRows {
  int chunk = 0;
  int first_pos = 0;          // the chunk position of the first scored row's logits
  std::vector<double> nll_a;  // A's NLL at every scored position
  // [mask - 1] for masks 1 … 2^k − 1 (mask 0 is A); nullopt where the combination cannot run.
  std::vector<std::optional<SweepArmRows>> combos;
  std::optional<SweepArmRows> floor;  // A against A re-split, when the sweep has a floor
  // B against B re-split (KL(B || B′), B′'s NLL, top-1 changes from B's); sweeps from before
  // B's floor have none.
  std::optional<SweepArmRows> floor_b;
};

// What every stored chunk of one sweep looks like; anything else is damage.
struct SweepShape {
  int first_pos = 0, n_positions = 0;
  std::vector<bool> possible;  // [mask], mask 0 (A) included: which combinations ran
  bool floor = false;
  bool floor_b = false;  // provenance floor_ubatch_b: sweeps from before it have no B floor
};

// The first value in which two chunks' rows differ, bit for bit (the position and setting
// named); nullopt when they are identical.
std::optional<std::string> sweep_rows_difference(const SweepChunkRows& stored,
                                                 const SweepChunkRows& again);

}  // namespace hd::store
