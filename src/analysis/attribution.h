// Attributing a divergence to the settings in which two arms differ. Pure.
//
// A sweep over k settings has 2^k combinations; combination `mask` takes arm B's value of
// setting i where bit i is set and A's elsewhere, so mask 0 is A and mask 2^k - 1 is B. v(mask)
// is a measured divergence from A (mean KL(A || combination)); v(0) is A against itself.
//
//   main effect of i = mean over the 2^(k-1) masks S without i of v(S | i) - v(S)
//   interaction of i, j = mean over the masks S without i, j of
//                         v(S | i | j) - v(S | i) - v(S | j) + v(S)
//   Shapley value of i = sum over masks S without i of |S|! (k - |S| - 1)! / k! (v(S | i) - v(S))
//
// The Shapley values sum to v(B) - v(A) exactly (up to rounding): each is a weighted sum of
// differences along the paths from A to B. Combinations that cannot run have v = NaN; every
// quantity that needs one is NaN (a main effect or interaction averages only over the pairs
// that can run, and says how many).
#pragma once
#include <cstddef>
#include <span>
#include <vector>

namespace hd::analysis {

struct Effect {
  double value = 0;  // NaN when no pair could run
  size_t pairs = 0;  // how many differences the mean is over
};

struct Attribution {
  std::vector<Effect> main;                      // [k]
  std::vector<std::vector<Effect>> interaction;  // [k][k], upper triangle (i < j) filled
  std::vector<double> shapley;                   // [k]; NaN when any combination is missing
};

// `v` has 2^k values indexed by mask (k = log2 of its size, at most 20). InputError otherwise.
Attribution attribute(std::span<const double> v);

// When some combinations cannot run, settings that must move together are joined into one
// player so that every combination of the players runs: starting from one setting per player,
// the pair of players whose joining leaves the fewest impossible combinations is joined, until
// none is left (at worst one player: A and B themselves must run). Returns each player as a
// mask of settings. `possible` has 2^k entries, indexed by setting mask.
std::vector<unsigned> coupled_players(const std::vector<bool>& possible);

// The game over players: value of a player mask = v of the union of its players' settings.
std::vector<double> player_values(std::span<const double> v, const std::vector<unsigned>& players);

}  // namespace hd::analysis
