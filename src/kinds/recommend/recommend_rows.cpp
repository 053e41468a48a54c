#include "kinds/recommend/recommend_rows.h"

#include <fmt/format.h>

#include <cmath>

#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::store {
namespace {

constexpr const char* kDdl =
    "CREATE TABLE recommend_sensitivity (round INTEGER, group_index INTEGER, type TEXT,"
    " grp TEXT NOT NULL, bytes INTEGER NOT NULL, status TEXT NOT NULL, kl_calibration REAL,"
    " kl_held_out REAL, top1_calibration REAL, PRIMARY KEY (round, group_index, type))"
    " WITHOUT ROWID";

std::string unit_hash_key(int round, int g) {
  return fmt::format("recommend_unit_sha256/{}/{}", round, g);
}

std::string unit_sha256(const Experiment& e, int round, int g) {
  return detail::unit_sha256(e, [&](Sha256& md) {
    Statement q(e.database().handle(),
                "SELECT * FROM recommend_sensitivity WHERE round = ? AND group_index = ? ORDER BY "
                "type");
    q.bind(1, int64_t{round}).bind(2, int64_t{g});
    detail::hash_rows(md, q);
  });
}

[[noreturn]] void damaged(const Experiment& e, const Statement& q, const std::string& what) {
  throw InputError(fmt::format("'{}' is damaged: recommend_sensitivity (round {}, group {}) {}",
                               e.path(), q.integer(0), q.integer(1), what));
}

double real_or_nan(const Experiment& e, const Statement& q, int col) {
  if (q.type(col) == SQLITE_NULL) return NAN;
  if (q.type(col) != SQLITE_FLOAT) damaged(e, q, "has a value that is not a number");
  const double v = q.real(col);
  if (!std::isfinite(v) || v < (col == 8 ? 0 : -INFINITY) || (col == 8 && v > 1))
    damaged(e, q, fmt::format("has {}", v));
  return v;
}

}  // namespace

void create_recommend_tables(Experiment& e) { e.database().exec(kDdl); }

bool has_recommend_tables(const Experiment& e) {
  return detail::has_table(e.database(), "recommend_sensitivity");
}

void put_recommend_unit(Experiment& e, int round, int group_index,
                        const std::vector<SensitivityRow>& rows) {
  Database& db = e.database();
  Transaction t(db);
  Statement q(db.handle(),
              "INSERT INTO recommend_sensitivity VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const SensitivityRow& r : rows) {
    q.bind(1, int64_t{round}).bind(2, int64_t{group_index}).bind(3, std::string_view(r.type));
    q.bind(4, std::string_view(r.group)).bind(5, static_cast<int64_t>(r.bytes));
    q.bind(6, std::string_view(r.status)).bind(7, r.kl_calibration);  // NaN: NULL
    q.bind(8, r.kl_held_out).bind(9, r.top1_calibration);
    q.run();
  }
  e.set_meta(unit_hash_key(round, group_index), unit_sha256(e, round, group_index));
  t.commit();
}

std::vector<SensitivityRow> read_sensitivity(const Experiment& e) {
  std::vector<SensitivityRow> out;
  Statement q(e.database().handle(),
              "SELECT * FROM recommend_sensitivity ORDER BY round, group_index, type");
  while (q.step()) {
    if (q.columns() != 9 || q.type(0) != SQLITE_INTEGER || q.type(1) != SQLITE_INTEGER ||
        q.type(2) != SQLITE_TEXT || q.type(3) != SQLITE_TEXT || q.type(4) != SQLITE_INTEGER ||
        q.type(5) != SQLITE_TEXT)
      damaged(e, q, "has the wrong columns");
    SensitivityRow r;
    r.round = static_cast<int>(q.integer(0));
    r.group_index = static_cast<int>(q.integer(1));
    r.type = q.text(2);
    r.group = q.text(3);
    if (q.integer(4) < 0 || r.group_index < 0 || r.round < 0 || r.round > 64)
      damaged(e, q, "has a count out of range");
    r.bytes = static_cast<uint64_t>(q.integer(4));
    r.status = q.text(5);
    r.kl_calibration = real_or_nan(e, q, 6);
    r.kl_held_out = real_or_nan(e, q, 7);
    r.top1_calibration = real_or_nan(e, q, 8);
    if ((r.status == "measured") == std::isnan(r.kl_calibration))
      damaged(e, q, "has a KL where none was measured, or none where one was");
    out.push_back(std::move(r));
  }
  return out;
}

std::set<int> stored_recommend_units(const Experiment& e, int groups_per_round, int rounds) {
  std::set<int> done;
  for (const SensitivityRow& r : read_sensitivity(e)) {
    const int unit = r.round * groups_per_round + r.group_index;
    if (done.count(unit)) continue;
    const auto recorded = e.meta(unit_hash_key(r.round, r.group_index));
    if (r.group_index >= groups_per_round || r.round >= rounds || !recorded ||
        *recorded != unit_sha256(e, r.round, r.group_index)) {
      throw InputError(fmt::format(
          "'{}': round {}'s tensor group {} was changed after it was stored; it cannot be "
          "resumed (run recommend again, with --force)",
          e.path(), r.round, r.group_index));
    }
    done.insert(unit);
  }
  return done;
}

}  // namespace hd::store
