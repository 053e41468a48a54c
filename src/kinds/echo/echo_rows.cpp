#include "kinds/echo/echo_rows.h"

#include <cmath>
#include <string>

#include "common/sha256.h"
#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::kinds {

namespace {
std::string hash_key(int chunk) { return "echo_sha256/" + std::to_string(chunk); }

// What resume checks: the chunk's rows and the configuration they came from, in the tagged
// encoding of the integrity hash.
std::string chunk_sha256(const store::Experiment& e, int chunk) {
  return store::detail::unit_sha256(e, [&](Sha256& md) {
    store::Statement q(e.database().handle(),
                       "SELECT * FROM echo_positions WHERE chunk = ? ORDER BY pos");
    q.bind(1, int64_t{chunk});
    store::detail::hash_rows(md, q);
  });
}
}  // namespace

void create_echo_table(store::Experiment& e) {
  e.database().exec(
      "CREATE TABLE echo_positions (chunk INTEGER, pos INTEGER, token INTEGER NOT NULL,"
      " nll REAL NOT NULL, PRIMARY KEY (chunk, pos)) WITHOUT ROWID");
}

void put_echo_chunk(store::Experiment& e, const std::vector<EchoRow>& rows) {
  store::Database& db = e.database();
  store::Transaction t(db);
  store::Statement q(db.handle(), "INSERT INTO echo_positions VALUES (?, ?, ?, ?)");
  for (const EchoRow& r : rows) {
    q.bind(1, int64_t{r.chunk}).bind(2, int64_t{r.pos}).bind(3, int64_t{r.token}).bind(4, r.nll);
    q.run();
  }
  if (!rows.empty()) e.set_meta(hash_key(rows.front().chunk), chunk_sha256(e, rows.front().chunk));
  t.commit();
}

std::vector<EchoRow> read_echo_rows(const store::Experiment& e) {
  std::vector<EchoRow> out;
  store::Statement q(e.database().handle(),
                     "SELECT chunk, pos, token, nll FROM echo_positions ORDER BY chunk, pos");
  while (q.step()) {
    const bool shaped = q.type(0) == SQLITE_INTEGER && q.type(1) == SQLITE_INTEGER &&
                        q.type(2) == SQLITE_INTEGER && q.type(3) == SQLITE_FLOAT;
    const double nll = shaped ? q.real(3) : NAN;
    if (!shaped || std::isnan(nll) || nll < 0 || q.integer(0) < 0 || q.integer(1) < 0 ||
        q.integer(0) > (1 << 30) || q.integer(1) > (1 << 30)) {
      throw InputError("'" + e.path() + "' is damaged: echo_positions has a row that is not a "
                       "chunk, a position, a token and an NLL of at least 0");
    }
    out.push_back({static_cast<int>(q.integer(0)), static_cast<int>(q.integer(1)),
                   static_cast<int32_t>(q.integer(2)), nll});
  }
  return out;
}

std::set<int> stored_echo_chunks(const store::Experiment& e) {
  std::set<int> out;
  for (const EchoRow& r : read_echo_rows(e)) out.insert(r.chunk);
  return out;
}

std::set<int> resumable_echo_chunks(const store::Experiment& e) {
  return store::detail::require_unchanged_units(
      e, stored_echo_chunks(e), hash_key, [&](int c) { return chunk_sha256(e, c); }, "echo chunk",
      "run the echo again, with --force");
}

}  // namespace hd::kinds
