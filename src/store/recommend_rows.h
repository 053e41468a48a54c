// The sensitivity rows of a `recommend` run (kind "recommend", run/recommend.h) in one table a
// pandas user reads as it is: `recommend_sensitivity`, one row per tensor group and candidate
// type, the change in KL measured with that group alone at that type. Group 0 is the base
// itself (the stock file type). A group is stored in one transaction with its hash (meta
// "recommend_group_sha256/<group>"): a group is in the file if and only if its rows are.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace hd::store {

class Experiment;

struct SensitivityRow {
  int group_index = 0;
  std::string group;  // "blk.3.ffn_down"; "(base)" for group 0
  std::string type;   // the candidate tensor type (group 0: the base file type)
  uint64_t bytes = 0;  // the group's tensors in that type, padded as the file lays them out
  // What the file read back says: "measured", "base" (the base already gives the group this
  // type: nothing to measure) or why the type is not an option ("falls back to Q5_0").
  std::string status;
  double kl_calibration = 0;  // mean KL(A || variant) on the calibration text; NaN unless measured
  double kl_held_out = 0;     // the same on the held-out text (the rank check only)
  double top1_calibration = 0;  // top-1 change rate on the calibration text
};

void create_recommend_tables(Experiment& e);
bool has_recommend_tables(const Experiment& e);

// Stores one group's rows and its hash in one transaction.
void put_recommend_group(Experiment& e, int group_index, const std::vector<SensitivityRow>& rows);

// Every stored row by group, then type as stored; a malformed row is damage (InputError naming
// the file).
std::vector<SensitivityRow> read_sensitivity(const Experiment& e);

// The groups resume may keep: stored and hashing as recorded (InputError otherwise).
std::set<int> stored_recommend_groups(const Experiment& e, int n_groups);

}  // namespace hd::store
