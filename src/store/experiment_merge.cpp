// Joining the parts of a sharded run (run/merge.h): every row of a part copied as stored, and
// the hash of the rows alone, by which a merged file is compared with a single-process run.
#include <fmt/format.h>

#include <cstring>
#include <span>
#include <vector>

#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::store {

namespace {
struct SchemaEntry {
  std::string type, name, sql;
};

std::vector<SchemaEntry> schema(Database& db) {
  std::vector<SchemaEntry> out;
  // Tables before their indices; meta is the merge's to write; sqlite_* are SQLite's own.
  Statement q(db.handle(),
              "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'index') AND "
              "sql IS NOT NULL AND name != 'meta' AND name NOT LIKE 'sqlite_%' "
              "ORDER BY type = 'index', name");
  while (q.step()) out.push_back({q.text(0), q.text(1), q.text(2)});
  return out;
}

bool exists(Database& db, const std::string& type, const std::string& name) {
  Statement q(db.handle(), "SELECT count(*) FROM sqlite_master WHERE type = ? AND name = ?");
  q.bind(1, type).bind(2, name);
  return q.step() && q.integer(0) > 0;
}

// Binds column `col` of `from`'s row as parameter `i` of `to`, with its storage class as is.
void bind_as_stored(Statement& to, int i, const Statement& from, int col) {
  switch (from.type(col)) {
    case SQLITE_NULL:
      to.bind_null(i);
      break;
    case SQLITE_INTEGER:
      to.bind(i, from.integer(col));
      break;
    case SQLITE_FLOAT:
      to.bind(i, from.real(col));
      break;
    case SQLITE_TEXT:
      to.bind(i, std::string_view(from.text(col)));
      break;
    default:
      to.bind_blob(i, from.blob(col));
  }
}
}  // namespace

void Experiment::append_rows(const Experiment& part) {
  Database& to = *db_;
  Transaction t(to);
  for (const SchemaEntry& s : schema(*part.db_)) {
    // A table only some parts have (a plug-in analysis with no rows yet) is made as stored.
    if (!exists(to, s.type, s.name)) to.exec(s.sql);
    if (s.type != "table") continue;
    Statement read(part.db_->handle(), "SELECT * FROM " + s.name);
    std::string marks;
    for (int c = 0; c < read.columns(); ++c) marks += c ? ", ?" : "?";
    // The vocabulary of two parts overlaps (the same pieces of the same model): kept once.
    // Any other row stored twice is two parts claiming one chunk, refused by the key.
    Statement write(to.handle(), fmt::format("INSERT {}INTO {} VALUES ({})",
                                             s.name == "vocab" ? "OR IGNORE " : "", s.name, marks));
    while (read.step()) {
      for (int c = 0; c < read.columns(); ++c) bind_as_stored(write, c + 1, read, c);
      write.run();
    }
  }
  t.commit();
}

std::string Experiment::rows_sha256() const {
  return integrity_hash(false);
}

}  // namespace hd::store
