// A thin RAII layer over SQLite's C API: a connection and prepared statements, errors as
// RuntimeError. Nothing heterodyne-specific lives here.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "errors.h"

namespace hd::store {

// Failures that are this process's or another's state, not the file's: never read as "the file
// is damaged". Another process holds the lock longer than a reader waits; no descriptor is left.
struct FileBusy : RuntimeError {
  using RuntimeError::RuntimeError;
};
struct OutOfDescriptors : RuntimeError {
  using RuntimeError::RuntimeError;
};

// A stored value longer than a reader's bound (LengthLimit): the file is damaged or hostile.
struct ValueTooLarge : InputError {
  using InputError::InputError;
};

class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, std::string_view v);
  Statement& bind_blob(int i, std::span<const uint8_t> v);
  Statement& bind_null(int i);
  bool step();  // true while a row is available
  void run();   // step to completion, then reset for reuse
  void reset();

  int columns() const;
  std::string name(int col) const;  // the column's name
  int type(int col) const;  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL
  int64_t integer(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  std::span<const uint8_t> blob(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class Database {
 public:
  Database(const std::string& path, bool writable, bool create);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* handle() const { return db_; }
  void exec(std::string_view sql);

 private:
  sqlite3* db_ = nullptr;
};

// While alive, SQLite reads and writes no string or blob of more than `bytes` on `db`: a step
// that meets one fails with ValueTooLarge before the value is loaded into memory.
class LengthLimit {
 public:
  LengthLimit(sqlite3* db, int bytes) : db_(db), was_(sqlite3_limit(db, SQLITE_LIMIT_LENGTH, bytes)) {}
  ~LengthLimit() { sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, was_); }
  LengthLimit(const LengthLimit&) = delete;
  LengthLimit& operator=(const LengthLimit&) = delete;

 private:
  sqlite3* db_;
  int was_;
};

// Commits on commit(), rolls back otherwise: a chunk is either wholly in the file or not at all.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace hd::store
