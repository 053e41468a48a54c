// The sensitivity rows of a `recommend` run (kind "recommend", kinds/recommend/recommend.h) in one table a
// pandas user reads as it is: `recommend_sensitivity`, one row per round, tensor group and
// candidate type, the KL measured with that group alone moved to that type from the round's
// start (round 0: the stock base; round r: the recipe round r - 1 chose). Group 0 is the start
// itself. A unit (one round's group) is stored in one transaction with its hash (meta
// "recommend_unit_sha256/<round>/<group>"): it is in the file if and only if its rows are.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace hd::store {

class Experiment;

struct SensitivityRow {
  int round = 0;
  int group_index = 0;
  std::string group;  // "blk.3.ffn_down"; "(base)", "(recipe 1)"… for group 0
  std::string type;   // the candidate tensor type (group 0: the base file type, or "start")
  uint64_t bytes = 0;  // the group's tensors in that type, padded as the file lays them out
  // What the file read back says: "measured", "start" (the round's start already gives the
  // group this type: nothing to measure) or why the type is not an option ("falls back: …").
  std::string status;
  double kl_calibration = 0;  // mean KL(A || variant) on the calibration text; NaN unless measured
  double kl_held_out = 0;     // the same on the held-out text (the rank check only)
  double top1_calibration = 0;  // top-1 change rate on the calibration text
};

void create_recommend_tables(Experiment& e);
bool has_recommend_tables(const Experiment& e);

// Stores one round's group (its rows all have that round and group) and its hash in one
// transaction.
void put_recommend_unit(Experiment& e, int round, int group_index,
                        const std::vector<SensitivityRow>& rows);

// Every stored row by round, group, then type; a malformed row is damage (InputError naming
// the file).
std::vector<SensitivityRow> read_sensitivity(const Experiment& e);

// The units resume may keep, as round * groups_per_round + group: stored and hashing as
// recorded (InputError otherwise).
std::set<int> stored_recommend_units(const Experiment& e, int groups_per_round, int rounds);

}  // namespace hd::store
