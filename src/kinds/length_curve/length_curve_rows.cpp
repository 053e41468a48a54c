#include "kinds/length_curve/length_curve_rows.h"

#include <cmath>
#include <string>

#include "common/sha256.h"
#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::kinds {

namespace {
std::string hash_key(int length) { return "length_curve_sha256/" + std::to_string(length); }

// What resume checks: the length's row and the configuration it came from, in the tagged
// encoding of the integrity hash.
std::string row_sha256(const store::Experiment& e, int length) {
  return store::detail::unit_sha256(e, [&](Sha256& md) {
    store::Statement q(e.database().handle(), "SELECT * FROM length_curve_rows WHERE length = ?");
    q.bind(1, int64_t{length});
    store::detail::hash_rows(md, q);
  });
}

[[noreturn]] void damaged(const store::Experiment& e) {
  throw InputError("'" + e.path() + "' is damaged: length_curve_rows has a row that is not a "
                   "length, two errors (or none), two KLs of at least 0 and a count of flips");
}

// A stored REAL, or NaN for NULL where the column may be NULL (not measured).
double real_or_nan(const store::Statement& q, int col, bool nullable, const store::Experiment& e) {
  if (nullable && q.type(col) == SQLITE_NULL) return NAN;
  if (q.type(col) != SQLITE_FLOAT) damaged(e);
  const double v = q.real(col);
  if (std::isnan(v) || v < 0) damaged(e);
  return v;
}
}  // namespace

void create_length_curve_table(store::Experiment& e) {
  e.database().exec(
      "CREATE TABLE length_curve_rows (length INTEGER PRIMARY KEY, rel_err REAL, max_abs REAL,"
      " mean_kl REAL NOT NULL, max_kl REAL NOT NULL, top1_flips INTEGER NOT NULL) WITHOUT ROWID");
}

void put_length_row(store::Experiment& e, const LengthRow& r) {
  store::Database& db = e.database();
  store::Transaction t(db);
  store::Statement q(db.handle(), "INSERT INTO length_curve_rows VALUES (?, ?, ?, ?, ?, ?)");
  q.bind(1, int64_t{r.length});
  if (!r.residual_measured) {  // not measured: NULL, never a number
    q.bind_null(2).bind_null(3);
  } else {
    q.bind(2, r.rel_err).bind(3, r.max_abs);
  }
  q.bind(4, r.mean_kl).bind(5, r.max_kl).bind(6, int64_t{r.top1_flips});
  q.run();
  e.set_meta(hash_key(r.length), row_sha256(e, r.length));
  t.commit();
}

std::vector<LengthRow> read_length_rows(const store::Experiment& e) {
  std::vector<LengthRow> out;
  store::Statement q(e.database().handle(),
                     "SELECT length, rel_err, max_abs, mean_kl, max_kl, top1_flips FROM "
                     "length_curve_rows ORDER BY length");
  while (q.step()) {
    if (q.type(0) != SQLITE_INTEGER || q.type(5) != SQLITE_INTEGER) damaged(e);
    if (q.integer(0) < 1 || q.integer(0) > (1 << 30) || q.integer(5) < 0 ||
        q.integer(5) > q.integer(0))
      damaged(e);
    LengthRow r;
    r.length = static_cast<int>(q.integer(0));
    r.rel_err = real_or_nan(q, 1, true, e);
    r.max_abs = real_or_nan(q, 2, true, e);
    if (std::isnan(r.rel_err) != std::isnan(r.max_abs)) damaged(e);
    r.residual_measured = !std::isnan(r.rel_err);
    r.mean_kl = real_or_nan(q, 3, false, e);
    r.max_kl = real_or_nan(q, 4, false, e);
    r.top1_flips = static_cast<int>(q.integer(5));
    out.push_back(r);
  }
  return out;
}

std::set<int> resumable_lengths(const store::Experiment& e) {
  std::set<int> stored;
  for (const LengthRow& r : read_length_rows(e)) stored.insert(r.length);
  return store::detail::require_unchanged_units(
      e, stored, hash_key, [&](int l) { return row_sha256(e, l); }, "the row of length",
      "run the curve again, with --force");
}

}  // namespace hd::kinds
