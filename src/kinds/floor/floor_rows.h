// The rows of a floor exploration (kind "floor", kinds/floor/floor.h) in two tables a pandas user reads
// as they are: `floor_runs`, one row per run (a ubatch size within a group), and
// `floor_patterns`, one row per group (a flash-attention value × thread count, in the order
// the run explores them). A group is stored in one transaction with its hash (meta
// "floor_group_sha256/<group>"), its `floor_patterns` row last: a group is in the file if and
// only if that row is (docs/experiment-format.md).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace hd::store {

class Experiment;

// One run: the group's settings at one ubatch, compared bit for bit with the group's run at
// the reference ubatch.
struct FloorRun {
  int n_ubatch = 0;
  int n_threads = 0;  // the thread count used (a default resolved)
  std::string flash_attn;
  bool identical = false;  // every scored position bitwise equal
  int64_t positions = 0, positions_differing = 0;
  double kl_mean = 0, kl_max = 0, top1_change_rate = 0;  // over all positions (0 where equal)
};

// One group: its runs by ascending ubatch, the pattern they show, and whether its run at the
// reference ubatch is bitwise the reference (the first group's).
struct FloorGroup {
  int index = 0;
  int n_threads = 0;
  std::string flash_attn;
  std::string summary;  // analysis::invariance_pattern of its runs
  bool same_as_reference = false;
  std::vector<FloorRun> runs;
};

// Makes the two tables (empty) in a new floor experiment.
void create_floor_tables(Experiment& e);
bool has_floor_tables(const Experiment& e);

// Stores one group and its hash in one transaction.
void put_floor_group(Experiment& e, const FloorGroup& g);

// Every stored group by index, each row checked against what a run can write: a malformed
// row, a gap in the groups or a group without runs is damage (InputError naming the file).
std::vector<FloorGroup> read_floor_groups(const Experiment& e);

// The groups resume may keep: stored, checked as above, and hashing as recorded (a group
// changed since it was stored is refused, InputError). `n_groups`: how many the run has.
std::set<int> stored_floor_groups(const Experiment& e, int n_groups);

// The rows and patterns as `show --json` prints them ({rows: [...], patterns: [...]}).
nlohmann::json floor_groups_json(const std::vector<FloorGroup>& groups);

}  // namespace hd::store
