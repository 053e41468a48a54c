#include "kinds/floor/floor_rows.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "common/sha256.h"
#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::store {

namespace {

constexpr const char* kPatternsDdl =
    "CREATE TABLE floor_patterns (group_index INTEGER PRIMARY KEY, n_threads INTEGER NOT NULL,"
    " flash_attn TEXT NOT NULL, summary TEXT NOT NULL, same_as_reference INTEGER NOT NULL)";
constexpr const char* kRunsDdl =
    "CREATE TABLE floor_runs (group_index INTEGER, n_ubatch INTEGER, n_threads INTEGER NOT NULL,"
    " flash_attn TEXT NOT NULL, identical INTEGER NOT NULL, positions INTEGER NOT NULL,"
    " positions_differing INTEGER NOT NULL, kl_mean REAL, kl_max REAL, top1_change_rate REAL,"
    " PRIMARY KEY (group_index, n_ubatch)) WITHOUT ROWID";

std::string group_hash_key(int g) { return "floor_group_sha256/" + std::to_string(g); }

// What resume checks: the group's rows and the configuration they came from, in the tagged
// encoding of the integrity hash (the pattern row, then the runs by ubatch).
std::string group_sha256(const Experiment& e, int g) {
  return detail::unit_sha256(e, [&](Sha256& md) {
    for (const char* sql : {"SELECT * FROM floor_patterns WHERE group_index = ?",
                            "SELECT * FROM floor_runs WHERE group_index = ? ORDER BY n_ubatch"}) {
      Statement q(e.database().handle(), sql);
      q.bind(1, int64_t{g});
      detail::hash_rows(md, q);
    }
  });
}

// A column read with the type a run writes it with; anything else is damage.
struct Reader {
  const Statement& q;
  const std::string& path;
  std::string where;  // "floor_runs (group 1, ubatch 7)"
  [[noreturn]] void damaged(const std::string& what) const {
    throw InputError("'" + path + "' is damaged: " + where + " " + what);
  }
  int64_t integer(int col, const char* name, int64_t lo, int64_t hi) const {
    if (q.type(col) != SQLITE_INTEGER)
      damaged(fmt::format("has a {} that is not an integer", name));
    const int64_t v = q.integer(col);
    if (v < lo || v > hi) damaged(fmt::format("has {} {}", name, v));
    return v;
  }
  std::string text(int col, const char* name) const {
    if (q.type(col) != SQLITE_TEXT) damaged(fmt::format("has a {} that is not text", name));
    return q.text(col);
  }
  // NaN is stored as NULL (a run of no positions); otherwise finite, in [lo, hi].
  double real(int col, const char* name, double lo, double hi) const {
    if (q.type(col) == SQLITE_NULL) return NAN;
    if (q.type(col) != SQLITE_FLOAT) damaged(fmt::format("has a {} that is not a number", name));
    const double v = q.real(col);
    if (!std::isfinite(v) || v < lo || v > hi) damaged(fmt::format("has {} {}", name, v));
    return v;
  }
};

constexpr int64_t kIntMax = 1LL << 40;

std::vector<FloorGroup> read_patterns(const Experiment& e) {
  std::vector<FloorGroup> out;
  Statement q(e.database().handle(), "SELECT * FROM floor_patterns ORDER BY group_index");
  while (q.step()) {
    const Reader r{q, e.path(), fmt::format("floor_patterns (group {})", q.integer(0))};
    if (q.columns() != 5) r.damaged("has the wrong columns");
    FloorGroup g;
    g.index = static_cast<int>(r.integer(0, "group_index", 0, kIntMax));
    if (g.index != static_cast<int>(out.size())) r.damaged("follows a gap in the groups");
    g.n_threads = static_cast<int>(r.integer(1, "n_threads", 1, 1 << 20));
    g.flash_attn = r.text(2, "flash_attn");
    g.summary = r.text(3, "summary");
    g.same_as_reference = r.integer(4, "same_as_reference", 0, 1) == 1;
    out.push_back(std::move(g));
  }
  return out;
}

FloorRun read_run(const Reader& r, const FloorGroup& g) {
  FloorRun run;
  run.n_ubatch = static_cast<int>(r.integer(1, "n_ubatch", 1, 1 << 24));
  run.n_threads = static_cast<int>(r.integer(2, "n_threads", 1, 1 << 20));
  run.flash_attn = r.text(3, "flash_attn");
  if (run.n_threads != g.n_threads || run.flash_attn != g.flash_attn)
    r.damaged("has other settings than its group");
  run.identical = r.integer(4, "identical", 0, 1) == 1;
  run.positions = r.integer(5, "positions", 0, kIntMax);
  run.positions_differing = r.integer(6, "positions_differing", 0, run.positions);
  if (run.identical != (run.positions_differing == 0))
    r.damaged("is identical and has differing positions, or neither");
  run.kl_mean = r.real(7, "kl_mean", 0, INFINITY);
  run.kl_max = r.real(8, "kl_max", 0, INFINITY);
  run.top1_change_rate = r.real(9, "top1_change_rate", 0, 1);
  return run;
}

}  // namespace

void create_floor_tables(Experiment& e) {
  Transaction t(e.database());
  e.database().exec(kPatternsDdl);
  e.database().exec(kRunsDdl);
  t.commit();
}

bool has_floor_tables(const Experiment& e) {
  Statement q(e.database().handle(),
              "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
              "('floor_runs', 'floor_patterns')");
  q.step();
  return q.integer(0) == 2;
}

void put_floor_group(Experiment& e, const FloorGroup& g) {
  Database& db = e.database();
  Transaction t(db);
  Statement run(db.handle(), "INSERT INTO floor_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const FloorRun& r : g.runs) {
    run.bind(1, int64_t{g.index}).bind(2, int64_t{r.n_ubatch}).bind(3, int64_t{r.n_threads});
    run.bind(4, std::string_view(r.flash_attn)).bind(5, int64_t{r.identical});
    run.bind(6, r.positions).bind(7, r.positions_differing);
    run.bind(8, r.kl_mean).bind(9, r.kl_max).bind(10, r.top1_change_rate);  // NaN: NULL
    run.run();
  }
  // Last: the group is in the file if and only if this row is.
  Statement(db.handle(), "INSERT INTO floor_patterns VALUES (?, ?, ?, ?, ?)")
      .bind(1, int64_t{g.index})
      .bind(2, int64_t{g.n_threads})
      .bind(3, std::string_view(g.flash_attn))
      .bind(4, std::string_view(g.summary))
      .bind(5, int64_t{g.same_as_reference})
      .run();
  e.set_meta(group_hash_key(g.index), group_sha256(e, g.index));
  t.commit();
}

std::vector<FloorGroup> read_floor_groups(const Experiment& e) {
  std::vector<FloorGroup> groups = read_patterns(e);
  Statement q(e.database().handle(), "SELECT * FROM floor_runs ORDER BY group_index, n_ubatch");
  while (q.step()) {
    const Reader r{q, e.path(),
                   fmt::format("floor_runs (group {}, ubatch {})", q.integer(0), q.integer(1))};
    if (q.columns() != 10) r.damaged("has the wrong columns");
    const int64_t g = r.integer(0, "group_index", 0, kIntMax);
    if (g >= static_cast<int64_t>(groups.size())) r.damaged("belongs to no stored group");
    groups[static_cast<size_t>(g)].runs.push_back(read_run(r, groups[static_cast<size_t>(g)]));
  }
  for (const FloorGroup& g : groups) {
    if (g.runs.empty())
      throw InputError(
          fmt::format("'{}' is damaged: floor group {} has no runs", e.path(), g.index));
  }
  return groups;
}

std::set<int> stored_floor_groups(const Experiment& e, int n_groups) {
  std::set<int> done;
  for (const FloorGroup& g : read_floor_groups(e)) {
    const auto recorded = e.meta(group_hash_key(g.index));
    if (g.index >= n_groups || !recorded || *recorded != group_sha256(e, g.index)) {
      throw InputError(fmt::format(
          "'{}': floor group {} was changed after it was stored; it cannot be resumed (run the "
          "floor again, with --force)",
          e.path(), g.index));
    }
    done.insert(g.index);
  }
  return done;
}

nlohmann::json floor_groups_json(const std::vector<FloorGroup>& groups) {
  nlohmann::json rows = nlohmann::json::array(), patterns = nlohmann::json::array();
  for (const FloorGroup& g : groups) {
    for (const FloorRun& r : g.runs) {
      rows.push_back({{"n_ubatch", r.n_ubatch},
                      {"n_threads", r.n_threads},
                      {"flash_attn", r.flash_attn},
                      {"identical", r.identical},
                      {"positions", r.positions},
                      {"positions_differing", r.positions_differing},
                      {"kl_mean", r.kl_mean},
                      {"kl_max", r.kl_max},
                      {"top1_change_rate", r.top1_change_rate}});
    }
    patterns.push_back({{"n_threads", g.n_threads},
                        {"flash_attn", g.flash_attn},
                        {"summary", g.summary},
                        {"same_as_reference", g.same_as_reference}});
  }
  return {{"rows", rows}, {"patterns", patterns}};
}

}  // namespace hd::store
