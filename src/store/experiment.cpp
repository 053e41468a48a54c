#include "store/experiment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "common/fatal.h"
#include "common/input_file.h"
#include "common/output_file.h"
#include "errors.h"
#include "store/experiment_detail.h"
#include "store/experiment_kind.h"
#include "store/sqlite.h"
#include "store/writer_lock.h"

namespace hd::store {

namespace fs = std::filesystem;
using detail::kTables;

// flock locks are independent of SQLite's fcntl locks, so this guards whole runs, not single
// transactions: a second writer is refused at once instead of interleaving chunks.
static bool try_lock(int fd) { return ::flock(fd, LOCK_EX | LOCK_NB) == 0; }

static std::string busy(const std::string& path) {
  return "'" + path + "' is being written by another heterodyne process";
}

static int take_lock(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw InputError("cannot open '" + path + "' for writing: " + std::strerror(errno));
  if (!try_lock(fd)) {
    ::close(fd);
    throw InputError(busy(path));
  }
  return fd;
}

static OutputPolicy experiment_policy(bool replace, const std::vector<std::string>& inputs,
                                      bool resumable = true) {
  return OutputPolicy(replace, inputs,
                      resumable ? "use --resume to finish it, or --force to replace it"
                                : "--force replaces it");
}

Experiment::Experiment(std::string path, std::unique_ptr<Database> db, int lock_fd)
    : path_(std::move(path)), db_(std::move(db)), lock_fd_(lock_fd) {}

Experiment::Experiment(Experiment&& o) noexcept
    : path_(std::move(o.path_)),
      db_(std::move(o.db_)),
      lock_fd_(o.lock_fd_),
      part_(std::move(o.part_)),
      publish_to_(std::move(o.publish_to_)),
      replaced_lock_fd_(o.replaced_lock_fd_),
      inputs_(std::move(o.inputs_)) {
  o.lock_fd_ = -1;
  o.replaced_lock_fd_ = -1;
  o.part_.clear();
}

Experiment::~Experiment() {
  db_.reset();
  if (!part_.empty()) {  // never published: the run left nothing worth keeping
    ::unlink(part_.c_str());
    ::unlink((part_ + "-journal").c_str());
    fatal::remove_temporary(part_);
    fatal::remove_temporary(part_ + "-journal");
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (replaced_lock_fd_ >= 0) ::close(replaced_lock_fd_);
}

// Whether another process holds the writer's lock on `path` (the probe's own lock goes with
// its descriptor).
static bool locked_by_another(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  const bool busy = !try_lock(fd);
  ::close(fd);
  return busy;
}

bool Experiment::being_written(const std::string& path) {
  // Without opening the file where /proc/locks tells (writer_lock.h); the probe otherwise.
  if (const auto held = flocked(path)) return *held;
  return locked_by_another(path);
}

std::string Experiment::live_status(const std::string& stored, const std::string& path) {
  if (stored != "running") return stored;
  return being_written(path) ? "running" : "stopped";
}

std::string Experiment::live_status() const {
  const std::string stored = meta("status").value_or("unknown");
  // Our own writer's lock is held on this descriptor: a writer reading itself is running.
  return lock_fd_ >= 0 ? stored : live_status(stored, path_);
}

void Experiment::check_creatable(const std::string& path, bool replace,
                                 const std::vector<std::string>& inputs, bool resumable) {
  const std::string target =
      check_output_path(path, experiment_policy(replace, inputs, resumable));
  // Told now, not after minutes of loading: create() is where the locks are taken for good.
  if (locked_by_another(target + ".part") || locked_by_another(target)) throw InputError(busy(path));
}

static void write_header(Database& db) {
  Transaction t(db);
  for (const auto& table : kTables) db.exec(table.ddl);
  Statement put(db.handle(), "INSERT INTO meta (key, value) VALUES (?, ?)");
  put.bind(1, std::string_view("format")).bind(2, std::string_view("heterodyne-experiment")).run();
  put.bind(1, std::string_view("schema_version")).bind(2, std::to_string(kSchemaVersion)).run();
  put.bind(1, std::string_view("status")).bind(2, std::string_view("running")).run();
  // Each chunk's hash is kept under chunk_sha256/N (a key kept for the files' bytes).
  put.bind(1, std::string_view("chunk_hashes")).bind(2, std::string_view("sha256")).run();
  t.commit();
}

// A hot journal beside the file being replaced (its last writer died mid-transaction) is
// rolled back into it by SQLite's first read, so that the old file stays whole whatever
// happens to the new one; then no journal is left for the new file to be mistaken for.
// A file that is not a database (a --force over something else) is left as it is.
static void roll_back_a_crashed_transaction(const std::string& path) {
  struct stat st {};
  if (::stat((path + "-journal").c_str(), &st) != 0) return;
  try {
    Database old(path, true, false);
    Statement(old.handle(), "SELECT count(*) FROM sqlite_master").step();
  } catch (const std::exception&) {
  }
}

Experiment Experiment::create(const std::string& path, bool replace,
                              const std::vector<std::string>& inputs, bool resumable) {
  const std::string target =
      check_output_path(path, experiment_policy(replace, inputs, resumable));
  // The part's name is fixed, and its lock is what two writers of one output meet on: the
  // second is told another process writes it (a stale part of a killed run is reused).
  const std::string part = target + ".part";
  struct stat st {};
  if (::lstat(part.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw InputError("'" + part + "' is in the way (not a regular file): remove it");
    // A part another writer holds is refused; an unlocked one was left by a killed run, and
    // is removed (never written into: it may be linked elsewhere).
    if (locked_by_another(part)) throw InputError(busy(path));
    ::unlink(part.c_str());
    ::unlink((part + "-journal").c_str());
  }
  const int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0 && errno == EEXIST) throw InputError(busy(path));  // another writer came first
  if (fd < 0) throw InputError("cannot write '" + part + "': " + std::strerror(errno));
  if (!try_lock(fd)) {
    ::close(fd);
    throw InputError(busy(path));
  }
  Experiment e(path, nullptr, fd);
  e.part_ = part;
  e.publish_to_ = target;
  e.inputs_ = inputs;
  fatal::add_temporary(part);
  fatal::add_temporary(part + "-journal");
  if (::lstat(target.c_str(), &st) == 0) {
    // It appeared after the check: only --force replaces it.
    if (!replace) {
      throw InputError("'" + path + "' already exists: " +
                       experiment_policy(replace, inputs, resumable).exists_advice);
    }
    e.replaced_lock_fd_ = take_lock(target);
    roll_back_a_crashed_transaction(target);
  }
  e.db_ = std::make_unique<Database>(part, true, true);
  e.db_->exec("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;");
  write_header(*e.db_);
  return e;
}

void Experiment::publish() {
  if (part_.empty()) return;
  const std::string& target = publish_to_;
  db_.reset();  // between transactions: closing leaves no journal behind
  if (replaced_lock_fd_ >= 0) {
    // The file being replaced is locked by us and its crashed transaction, if any, was rolled
    // back at create(): still, a journal at its name would be taken for this file's.
    struct stat held {}, now {};
    if (::fstat(replaced_lock_fd_, &held) != 0 || ::lstat(target.c_str(), &now) != 0 ||
        held.st_dev != now.st_dev || held.st_ino != now.st_ino) {
      throw RuntimeError("'" + path_ + "' was replaced by something else while this run ran");
    }
    ::unlink((target + "-journal").c_str());
  }
  // Replace only the file locked at the start: anything that appeared at the path since is kept.
  move_into_place(part_, target, experiment_policy(replaced_lock_fd_ >= 0, inputs_),
                  file_ids(inputs_));
  fatal::remove_temporary(part_);
  fatal::remove_temporary(part_ + "-journal");
  part_.clear();
  if (replaced_lock_fd_ >= 0) ::close(replaced_lock_fd_);
  replaced_lock_fd_ = -1;
  try {
    db_ = std::make_unique<Database>(target, true, false);
    db_->exec("PRAGMA synchronous=FULL;");
  } catch (const std::exception& e) {
    throw RuntimeError("'" + path_ + "' is in place but cannot be opened again: " + e.what());
  }
}

Experiment Experiment::open(const std::string& path, bool writable) {
  require_regular_file(path, "experiment file");
  std::unique_ptr<Database> db;
  int fd = -1;
  // Through a symbolic link, the file it leads to is the one locked and written.
  std::error_code ec;
  const std::string real = fs::canonical(path, ec).string();
  if (writable) fd = take_lock(ec ? path : real);
  try {
    db = std::make_unique<Database>(path, writable, false);
    LengthLimit bound(db->handle(), kMaxFieldBytes);
    Statement q(db->handle(), "SELECT value FROM meta WHERE key = 'format'");
    if (!q.step() || q.text(0) != "heterodyne-experiment") throw InputError("");
  } catch (const FileBusy&) {
    if (fd >= 0) ::close(fd);
    throw;
  } catch (const OutOfDescriptors&) {
    if (fd >= 0) ::close(fd);
    throw;
  } catch (const std::exception&) {
    if (fd >= 0) ::close(fd);
    throw InputError("'" + path + "' is not a heterodyne experiment file (or it is damaged)");
  }
  Experiment e(path, std::move(db), fd);
  // A reader loads no value above the bound, from any table; residual reads raise it.
  if (!writable) sqlite3_limit(e.db_->handle(), SQLITE_LIMIT_LENGTH, kMaxFieldBytes);
  e.check_meta_sizes();
  const auto version = e.meta("schema_version");
  if (!version)
    throw InputError("'" + path +
                     "' has no schema version: it is damaged or not a heterodyne experiment");
  // Strictly the digits one of the known versions is written with: "01", "1.0", " 1" or a
  // number past any int are not a version this build wrote, and must not read as an old one.
  if (*version != std::to_string(kSchemaVersion)) {
    const bool digits = !version->empty() && version->size() <= 9 &&
                        version->find_first_not_of("0123456789") == std::string::npos &&
                        (*version)[0] != '0';
    const std::string shown = version->size() > 24 ? version->substr(0, 24) + "…" : *version;
    const long v = digits ? std::stol(*version) : 0;
    throw InputError("'" + path + "' has schema version '" + shown + "'" +
                     (v > kSchemaVersion  ? ", newer than this heterodyne reads"
                      : v >= 1            ? ", an older format this heterodyne no longer reads "
                                            "(run it again with this build)"
                                          : ", which no heterodyne writes") +
                     " (this build reads version " + std::to_string(kSchemaVersion) + ")");
  }
  return e;
}

void Experiment::check_meta_sizes() const {
  try {
    LengthLimit bound(db_->handle(), kMaxFieldBytes);
    Statement q(db_->handle(), "SELECT key, value FROM meta");
    while (q.step()) {
    }
  } catch (const ValueTooLarge&) {
    // Which one: every key is read alone (a key is small; only the value is bounded).
    std::string key = "?";
    Statement keys(db_->handle(), "SELECT key FROM meta");
    while (keys.step() && key == "?") {
      try {
        (void)meta(keys.text(0));
      } catch (const ValueTooLarge&) {
        key = keys.text(0);
      }
    }
    throw InputError(fmt::format("'{}' is damaged or not heterodyne's: its stored meta '{}' is "
                                 "larger than the {} MiB a reader takes from one field",
                                 path_, key.size() > 60 ? key.substr(0, 60) + "…" : key,
                                 kMaxFieldBytes >> 20));
  }
}

void Experiment::set_meta(const std::string& key, const std::string& value) {
  if (value.size() > static_cast<size_t>(kMaxFieldBytes)) {
    throw RuntimeError(fmt::format("'{}': its {} would be {:.1f} MiB, more than the {} MiB a "
                                   "reader takes from one stored field (merge fewer, larger "
                                   "parts?)",
                                   path_, key, static_cast<double>(value.size()) / 1048576.0, kMaxFieldBytes >> 20));
  }
  Statement(db_->handle(), "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)")
      .bind(1, key)
      .bind(2, value)
      .run();
}

std::optional<std::string> Experiment::meta(const std::string& key) const {
  LengthLimit bound(db_->handle(), kMaxFieldBytes);
  Statement q(db_->handle(), "SELECT value FROM meta WHERE key = ?");
  q.bind(1, key);
  if (!q.step()) return std::nullopt;
  return q.text(0);
}

std::map<std::string, std::string> Experiment::all_meta() const {
  LengthLimit bound(db_->handle(), kMaxFieldBytes);
  std::map<std::string, std::string> out;
  Statement q(db_->handle(), "SELECT key, value FROM meta");
  while (q.step()) out[q.text(0)] = q.text(1);
  return out;
}

std::string Experiment::stored_config() const {
  if (auto c = meta("config")) return *c;
  throw InputError("'" + path_ +
                   "' holds no run: it was stopped before its configuration was stored (run the " +
                   kind_name(*this) + " again, with --force)");
}

std::string Experiment::required_meta(const std::string& key) const {
  if (auto v = meta(key)) return *v;
  throw InputError("'" + path_ + "' has no stored " + key +
                   ": the run that made it stopped before it began; run it again");
}


Experiment Experiment::in_memory() {
  auto db = std::make_unique<Database>(":memory:", true, true);
  write_header(*db);
  return Experiment(":memory:", std::move(db), -1);
}

std::string Experiment::integrity_verdict() const {
  const auto sealed_hash = meta("integrity_sha256");
  if (!sealed_hash) return "not sealed";
  return *sealed_hash == compute_integrity() ? "ok" : kIntegrityMismatch;
}

std::string integrity_warning(const std::string& path) {
  return "warning: '" + path + "' fails its integrity check (changed after it was sealed): its "
         "numbers may not be the run's";
}

bool Experiment::sealed() const {
  return meta("status").value_or("") == "complete" && meta("integrity_sha256").has_value();
}

void Experiment::seal() {
  // One transaction: a run killed between the two would be "complete" with no hash, which
  // --resume takes as finished and verify as unfinished.
  Transaction t(*db_);
  set_meta("status", "complete");
  set_meta("integrity_sha256", compute_integrity());
  t.commit();
}

}  // namespace hd::store
