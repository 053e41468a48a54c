// Reading one chunk of a sweep back from its tables, every value checked against what a sweep writes: a row out of place, of another type, not
// finite, or missing is damage, named in one line (InputError), never a crash.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"
#include "store/sweep_rows_detail.h"

namespace hd::store {

namespace {

[[noreturn]] void damaged(const std::string& path, int chunk, const std::string& what) {
  throw InputError(fmt::format("'{}' is damaged: sweep chunk {} {}", path, chunk, what));
}

// An arm's rows by (comparison, mask): ("combination", m), ("floor", 0) or ("floor_b", 0).
using ArmKey = std::pair<std::string, int64_t>;
std::string arm_name(const ArmKey& k) { return fmt::format("{} mask {}", k.first, k.second); }

bool belongs(const ArmKey& k, const SweepShape& shape) {
  if (k.first == "floor") return k.second == 0 && shape.floor;
  if (k.first == "floor_b") return k.second == 0 && shape.floor_b;
  return k.first == "combination" && k.second >= 0 &&
         k.second < static_cast<int64_t>(shape.possible.size()) &&
         shape.possible[static_cast<size_t>(k.second)];
}

// The chunk's sweep_positions rows, each in its place (positions in order from first_pos).
void read_positions(Database& db, const std::string& path, int chunk, const SweepShape& shape,
                    std::map<ArmKey, SweepArmRows>& arms) {
  Statement q(db.handle(),
              "SELECT comparison, mask, pos, kl, nll FROM sweep_positions WHERE chunk = ? "
              "ORDER BY comparison, mask, pos");
  q.bind(1, int64_t{chunk});
  while (q.step()) {
    if (q.type(0) != SQLITE_TEXT || q.type(1) != SQLITE_INTEGER || q.type(2) != SQLITE_INTEGER)
      damaged(path, chunk, "has a malformed row in sweep_positions");
    const ArmKey key{q.text(0), q.integer(1)};
    if (!belongs(key, shape))
      damaged(path, chunk, "holds rows of " + arm_name(key) + ", which this sweep has not");
    SweepArmRows& arm = arms[key];
    const int64_t expected = shape.first_pos + static_cast<int64_t>(arm.kl.size());
    if (q.integer(2) != expected || arm.kl.size() >= static_cast<size_t>(shape.n_positions)) {
      damaged(
          path, chunk,
          fmt::format("{}: position {} where {} belongs", arm_name(key), q.integer(2), expected));
    }
    for (int col : {3, 4}) {
      if (q.type(col) != SQLITE_FLOAT || !std::isfinite(q.real(col))) {
        damaged(path, chunk,
                fmt::format("{} pos {}: {} is not a finite number", arm_name(key), expected,
                            col == 3 ? "kl" : "nll"));
      }
    }
    arm.kl.push_back(q.real(3));
    arm.nll.push_back(q.real(4));
  }
}

// The chunk's sweep_flips rows: one per arm with positions, a count of its positions.
std::set<ArmKey> read_flips(Database& db, const std::string& path, int chunk,
                            const SweepShape& shape, std::map<ArmKey, SweepArmRows>& arms) {
  Statement q(db.handle(), "SELECT comparison, mask, flips FROM sweep_flips WHERE chunk = ?");
  q.bind(1, int64_t{chunk});
  std::set<ArmKey> seen;
  while (q.step()) {
    if (q.type(0) != SQLITE_TEXT || q.type(1) != SQLITE_INTEGER || q.type(2) != SQLITE_INTEGER)
      damaged(path, chunk, "has a malformed row in sweep_flips");
    const ArmKey key{q.text(0), q.integer(1)};
    const int64_t flips = q.integer(2);
    if (!arms.count(key))
      damaged(path, chunk, "counts flips of " + arm_name(key) + ", which has no positions");
    if (flips < 0 || flips > shape.n_positions)
      damaged(path, chunk, fmt::format("{}: {} flips", arm_name(key), flips));
    arms[key].flips = flips;
    seen.insert(key);
  }
  return seen;
}

// The chunk's rows in the tables, each arm whole; mask 0 is A against itself.
SweepChunkRows from_tables(const std::string& path, int chunk, const SweepShape& shape,
                           std::map<ArmKey, SweepArmRows>& arms,
                           const std::set<ArmKey>& with_flips) {
  const auto take = [&](const ArmKey& key) {
    const auto it = arms.find(key);
    if (it == arms.end()) damaged(path, chunk, "has no rows of " + arm_name(key));
    if (it->second.kl.size() != static_cast<size_t>(shape.n_positions)) {
      damaged(path, chunk,
              fmt::format("has {} rows of {}, not {}", it->second.kl.size(), arm_name(key),
                          shape.n_positions));
    }
    if (!with_flips.count(key)) damaged(path, chunk, "has no flips row of " + arm_name(key));
    return it->second;
  };
  SweepChunkRows r;
  r.chunk = chunk;
  r.first_pos = shape.first_pos;
  const SweepArmRows a = take({"combination", 0});
  for (double kl : a.kl) {
    if (kl != 0) damaged(path, chunk, "gives A a KL against itself other than 0");
  }
  if (a.flips != 0) damaged(path, chunk, "gives A flips against itself");
  r.nll_a = a.nll;
  for (size_t m = 1; m < shape.possible.size(); ++m) {
    if (shape.possible[m])
      r.combos.push_back(take({"combination", static_cast<int64_t>(m)}));
    else
      r.combos.push_back(std::nullopt);
  }
  if (shape.floor) r.floor = take({"floor", 0});
  if (shape.floor_b) r.floor_b = take({"floor_b", 0});
  return r;
}

}  // namespace

std::optional<SweepChunkRows> Experiment::sweep_chunk(int chunk, const SweepShape& shape) const {
  std::map<ArmKey, SweepArmRows> arms;
  std::set<ArmKey> with_flips;
  if (detail::has_table(*db_, "sweep_positions")) read_positions(*db_, path_, chunk, shape, arms);
  if (detail::has_table(*db_, "sweep_flips"))
    with_flips = read_flips(*db_, path_, chunk, shape, arms);
  if (!meta(detail::sweep_rows_hash_key(chunk))) {
    // Rows and hash are written in one transaction: rows without it were put there by hand.
    if (!arms.empty()) damaged(path_, chunk, "has rows but no recorded hash");
    return std::nullopt;
  }
  return from_tables(path_, chunk, shape, arms, with_flips);
}

void Experiment::require_sweep_rows_within(int total) const {
  for (const auto& t : detail::kSweepTables) {
    if (!detail::has_table(*db_, t.name)) continue;
    Statement q(db_->handle(),
                fmt::format("SELECT quote(chunk) FROM {} WHERE typeof(chunk) != 'integer' OR "
                            "chunk < 0 OR chunk >= ? LIMIT 1",
                            t.name));
    q.bind(1, int64_t{total});
    if (q.step()) {
      throw InputError(
          fmt::format("'{}' is damaged: {} has a row of chunk {}, outside the "
                      "sweep's {} chunks",
                      path_, t.name, q.text(0), total));
    }
  }
}

}  // namespace hd::store
