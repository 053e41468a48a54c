#include "kinds/server_floor/server_floor_rows.h"

#include <cmath>
#include <string>

#include "common/sha256.h"
#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::kinds {

namespace {
std::string hash_key(int chunk) { return "server_floor_sha256/" + std::to_string(chunk); }

std::string chunk_sha256(const store::Experiment& e, int chunk) {
  return store::detail::unit_sha256(e, [&](Sha256& md) {
    store::Statement q(e.database().handle(),
                       "SELECT * FROM server_floor_positions WHERE chunk = ? ORDER BY pos");
    q.bind(1, int64_t{chunk});
    store::detail::hash_rows(md, q);
  });
}

bool is_kl(double v) { return !std::isnan(v) && v >= 0; }
}  // namespace

void create_server_floor_table(store::Experiment& e) {
  e.database().exec(
      "CREATE TABLE server_floor_positions (chunk INTEGER, pos INTEGER, kl_mean REAL NOT NULL,"
      " kl_max REAL NOT NULL, flips INTEGER NOT NULL, varies INTEGER NOT NULL,"
      " top1 INTEGER NOT NULL, PRIMARY KEY (chunk, pos)) WITHOUT ROWID");
}

void put_server_floor_chunk(store::Experiment& e, const std::vector<ServerFloorRow>& rows) {
  store::Database& db = e.database();
  store::Transaction t(db);
  store::Statement q(db.handle(), "INSERT INTO server_floor_positions VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const ServerFloorRow& r : rows) {
    q.bind(1, int64_t{r.chunk}).bind(2, int64_t{r.pos}).bind(3, r.kl_mean).bind(4, r.kl_max);
    q.bind(5, int64_t{r.flips}).bind(6, int64_t{r.varies ? 1 : 0}).bind(7, int64_t{r.top1});
    q.run();
  }
  if (!rows.empty()) e.set_meta(hash_key(rows.front().chunk), chunk_sha256(e, rows.front().chunk));
  t.commit();
}

std::vector<ServerFloorRow> read_server_floor_rows(const store::Experiment& e) {
  std::vector<ServerFloorRow> out;
  store::Statement q(e.database().handle(),
                     "SELECT chunk, pos, kl_mean, kl_max, flips, varies, top1 FROM "
                     "server_floor_positions ORDER BY chunk, pos");
  while (q.step()) {
    bool shaped = true;
    for (int i : {0, 1, 4, 5, 6}) shaped = shaped && q.type(i) == SQLITE_INTEGER;
    for (int i : {2, 3}) shaped = shaped && q.type(i) == SQLITE_FLOAT;
    const double mean = shaped ? q.real(2) : NAN, max = shaped ? q.real(3) : NAN;
    if (!shaped || !is_kl(mean) || !is_kl(max) || mean > max || q.integer(0) < 0 ||
        q.integer(1) < 0 || q.integer(0) > (1 << 30) || q.integer(1) > (1 << 30) ||
        q.integer(4) < 0 || q.integer(4) > (1 << 20) || (q.integer(5) != 0 && q.integer(5) != 1)) {
      throw InputError("'" + e.path() + "' is damaged: server_floor_positions has a row that is "
                       "not a chunk, a position, two KLs of at least 0, a count and a top-1");
    }
    out.push_back({static_cast<int>(q.integer(0)), static_cast<int>(q.integer(1)), mean, max,
                   static_cast<int>(q.integer(4)), q.integer(5) == 1,
                   static_cast<int32_t>(q.integer(6))});
  }
  return out;
}

std::set<int> resumable_server_floor_chunks(const store::Experiment& e) {
  std::set<int> stored;
  for (const ServerFloorRow& r : read_server_floor_rows(e)) stored.insert(r.chunk);
  return store::detail::require_unchanged_units(
      e, stored, hash_key, [&](int c) { return chunk_sha256(e, c); }, "server-floor chunk");
}

}  // namespace hd::kinds
