#include "store/sqlite.h"

#include <cerrno>
#include <cstring>

namespace hd::store {

// Out of descriptors is this process's state, not the file's: said as what it is.
static bool out_of_descriptors(int os_error) { return os_error == EMFILE || os_error == ENFILE; }
static std::string descriptor_limit(int os_error) {
  return std::string(std::strerror(os_error)) +
         " (the limit on open files, ulimit -n, is reached; the file is not the cause)";
}

static void check(sqlite3* db, int rc, std::string_view what) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  if ((rc & 0xff) == SQLITE_CANTOPEN && db && out_of_descriptors(sqlite3_system_errno(db)))
    throw OutOfDescriptors(std::string(what) + ": " + descriptor_limit(sqlite3_system_errno(db)));
  std::string msg = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  if ((rc & 0xff) == SQLITE_FULL) msg = std::string(what) + ": the disk is full";
  if ((rc & 0xff) == SQLITE_IOERR) {  // EFBIG, ENOSPC on the journal, a failing disk
    msg = std::string(what) + ": cannot write to the disk (" +
          (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) + "; is it full or over a size limit?)";
  }
  if ((rc & 0xff) == SQLITE_TOOBIG) {
    throw ValueTooLarge(std::string(what) + ": a stored value is larger than the " +
                        (db ? std::to_string(sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1) >> 20)
                            : std::string("?")) +
                        " MiB a reader takes from one field: the file is damaged or not heterodyne's");
  }
  if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
    throw FileBusy(std::string(what) + ": the file is locked by another process");
  throw RuntimeError(msg);
}

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db) {
  check(db_, sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr),
        "preparing a query on the experiment file");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int i, int64_t v) {
  check(db_, sqlite3_bind_int64(stmt_, i, v), "bind");
  return *this;
}
Statement& Statement::bind(int i, double v) {
  check(db_, sqlite3_bind_double(stmt_, i, v), "bind");
  return *this;
}
Statement& Statement::bind(int i, std::string_view v) {
  check(db_, sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT),
        "bind");
  return *this;
}
Statement& Statement::bind_blob(int i, std::span<const uint8_t> v) {
  check(db_, sqlite3_bind_blob64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT), "bind");
  return *this;
}
Statement& Statement::bind_null(int i) {
  check(db_, sqlite3_bind_null(stmt_, i), "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  check(db_, rc, "reading or writing the experiment file");
  return rc == SQLITE_ROW;
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int Statement::columns() const { return sqlite3_column_count(stmt_); }
std::string Statement::name(int col) const {
  const char* n = sqlite3_column_name(stmt_, col);
  return n ? n : "";
}
int Statement::type(int col) const { return sqlite3_column_type(stmt_, col); }
int64_t Statement::integer(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::real(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Statement::text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
           : "";
}
std::span<const uint8_t> Statement::blob(int col) const {
  const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, col));
  return {p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))};
}

Database::Database(const std::string& path, bool writable, bool create) {
  int flags = writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
  if (create) flags |= SQLITE_OPEN_CREATE;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    const int os_error = db_ ? sqlite3_system_errno(db_) : 0;
    sqlite3_close(db_);
    db_ = nullptr;
    if (out_of_descriptors(os_error)) {
      throw OutOfDescriptors("cannot open experiment file '" + path + "': " +
                             descriptor_limit(os_error));
    }
    throw InputError("cannot open experiment file '" + path + "': " + why);
  }
  // Readers (show, serve's experiment list) hold a shared lock while they read; a writer's
  // commit waits for them. The writer waits long: a run must not fail because a UI polled its
  // file (seen under 16 polling clients with the sanitizers on). Once it waits, SQLite's pending
  // lock turns new readers away, so the wait ends; readers give up sooner and skip the file.
  sqlite3_busy_timeout(db_, writable ? 120000 : 2000);
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(std::string_view sql) {
  // check() reads sqlite3_errmsg, so sqlite3_exec's own copy of the message is not needed.
  const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) check(db_, rc, "writing the experiment file");
}

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace hd::store
