#include "store/experiment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/fatal.h"
#include "common/input_file.h"
#include "common/output_file.h"
#include "common/sha256.h"
#include "errors.h"
#include "store/analysis_tables.h"
#include "store/sqlite.h"

namespace hd::store {

namespace fs = std::filesystem;
using analysis::ChunkResult;
using analysis::Comparison;
using analysis::TopK;

// Every table, with the key its rows are ordered by in the integrity serialization.
struct TableDef {
  const char* name;
  const char* order;
  const char* ddl;
};
static const TableDef kTables[] = {
    {"meta", "key", "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"},
    {"chunks", "chunk",
     "CREATE TABLE chunks (chunk INTEGER PRIMARY KEY, n_tokens INTEGER NOT NULL, seconds REAL NOT "
     "NULL)"},
    {"tokens", "chunk, pos",
     "CREATE TABLE tokens (chunk INTEGER, pos INTEGER, token_id INTEGER NOT NULL,"
     " PRIMARY KEY (chunk, pos)) WITHOUT ROWID"},
    {"vocab", "token_id", "CREATE TABLE vocab (token_id INTEGER PRIMARY KEY, text TEXT NOT NULL)"},
    {"positions", "comparison, chunk, pos",
     "CREATE TABLE positions (comparison TEXT, chunk INTEGER, pos INTEGER, target_id INTEGER NOT "
     "NULL,"
     " scored INTEGER NOT NULL, kl REAL, nll_a REAL, nll_b REAL, top1_a INTEGER, p_top1_a REAL,"
     " top1_b INTEGER, p_top1_b REAL, top5_a TEXT, top5_b TEXT,"
     " PRIMARY KEY (comparison, chunk, pos)) WITHOUT ROWID"},
    {"layers", "comparison, chunk, layer, pos",
     "CREATE TABLE layers (comparison TEXT, chunk INTEGER, layer INTEGER, pos INTEGER,"
     " rel_err REAL, cosine REAL, max_abs REAL,"
     " PRIMARY KEY (comparison, chunk, layer, pos)) WITHOUT ROWID"},
    {"transplants", "chunk, direction, step, pos",
     "CREATE TABLE transplants (chunk INTEGER, direction TEXT, step INTEGER, point TEXT NOT NULL,"
     " pos INTEGER, kl REAL, PRIMARY KEY (chunk, direction, step, pos)) WITHOUT ROWID"},
    {"residuals", "chunk, arm, layer",
     "CREATE TABLE residuals (chunk INTEGER, arm TEXT, layer INTEGER, n_tokens INTEGER NOT NULL,"
     " width INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (chunk, arm, layer)) WITHOUT ROWID"},
};

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

static OutputPolicy experiment_policy(bool replace, const std::vector<std::string>& inputs) {
  return OutputPolicy(replace, inputs, "use --resume to finish it, or --force to replace it");
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

void Experiment::check_creatable(const std::string& path, bool replace,
                                 const std::vector<std::string>& inputs) {
  const std::string target = check_output_path(path, experiment_policy(replace, inputs));
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
  // Files from before per-chunk hashes lack this key: only they may have chunks without one.
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
                              const std::vector<std::string>& inputs) {
  const std::string target = check_output_path(path, experiment_policy(replace, inputs));
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
      throw InputError("'" + path +
                       "' already exists: use --resume to finish it, or --force to replace it");
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
    Statement q(db->handle(), "SELECT value FROM meta WHERE key = 'format'");
    if (!q.step() || q.text(0) != "heterodyne-experiment") throw InputError("");
  } catch (const std::exception&) {
    if (fd >= 0) ::close(fd);
    throw InputError("'" + path + "' is not a heterodyne experiment file (or it is damaged)");
  }
  Experiment e(path, std::move(db), fd);
  const auto version = e.meta("schema_version");
  if (!version)
    throw InputError("'" + path +
                     "' has no schema version: it is damaged or not a heterodyne experiment");
  if (std::atoi(version->c_str()) > kSchemaVersion) {
    throw InputError("'" + path + "' has schema version " + version.value_or("?") +
                     ", newer than this heterodyne reads (" + std::to_string(kSchemaVersion) + ")");
  }
  return e;
}

void Experiment::set_meta(const std::string& key, const std::string& value) {
  Statement(db_->handle(), "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)")
      .bind(1, key)
      .bind(2, value)
      .run();
}

std::optional<std::string> Experiment::meta(const std::string& key) const {
  Statement q(db_->handle(), "SELECT value FROM meta WHERE key = ?");
  q.bind(1, key);
  if (!q.step()) return std::nullopt;
  return q.text(0);
}

std::string Experiment::required_meta(const std::string& key) const {
  if (auto v = meta(key)) return *v;
  throw InputError("'" + path_ + "' has no stored " + key +
                   ": the run that made it stopped before it began; run it again");
}

// Top-k as JSON, [[id, p], ...]; p printed as the shortest text that reads back as the same f32.
static std::string top_json(const TopK& t) {
  std::string s = "[";
  for (size_t k = 0; k < t.id.size(); ++k) {
    s += fmt::format("{}[{},{}]", k ? "," : "", t.id[k], t.p[k]);
  }
  return s + "]";
}

// The inverse of top_json; nullopt when `s` is not what top_json writes (k pairs of an integer
// id and a finite probability in [0, 1]).
static std::optional<TopK> parse_top(const std::string& s) {
  TopK t;
  const char* p = s.c_str();
  const auto skip = [&](char c) {
    while (*p == ' ') ++p;
    if (*p != c) return false;
    ++p;
    return true;
  };
  if (!skip('[')) return std::nullopt;
  for (size_t k = 0; k < t.id.size(); ++k) {
    if (k > 0 && !skip(',')) return std::nullopt;
    if (!skip('[')) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const long id = std::strtol(p, &end, 10);
    if (end == p || errno != 0 || id < INT32_MIN || id > INT32_MAX) return std::nullopt;
    t.id[k] = static_cast<int32_t>(id);
    p = end;
    if (!skip(',')) return std::nullopt;
    t.p[k] = std::strtof(p, &end);
    if (end == p || !std::isfinite(t.p[k]) || t.p[k] < 0 || t.p[k] > 1) return std::nullopt;
    p = end;
    if (!skip(']')) return std::nullopt;
  }
  if (!skip(']')) return std::nullopt;
  return t;
}

static void put_comparison(Database& db, const char* name, int chunk, const Comparison& c) {
  Statement pos(db.handle(),
                "INSERT INTO positions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const auto& r : c.positions) {
    pos.bind(1, std::string_view(name)).bind(2, int64_t{chunk}).bind(3, int64_t{r.pos});
    pos.bind(4, int64_t{r.target}).bind(5, int64_t{r.scored});
    pos.bind(6, r.score.kl).bind(7, r.score.nll_a).bind(8, r.score.nll_b);
    pos.bind(9, int64_t{r.score.top_a.id[0]}).bind(10, double{r.score.top_a.p[0]});
    pos.bind(11, int64_t{r.score.top_b.id[0]}).bind(12, double{r.score.top_b.p[0]});
    pos.bind(13, top_json(r.score.top_a)).bind(14, top_json(r.score.top_b));
    pos.run();
  }
  Statement lay(db.handle(), "INSERT INTO layers VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const auto& l : c.layers) {
    lay.bind(1, std::string_view(name)).bind(2, int64_t{chunk}).bind(3, int64_t{l.layer});
    lay.bind(4, int64_t{l.pos})
        .bind(5, l.diff.rel_err)
        .bind(6, l.diff.cosine)
        .bind(7, l.diff.max_abs);
    lay.run();
  }
}

static std::string chunk_hash_key(int chunk);
static std::string chunk_sha256(Database& db, const Experiment& e, int chunk);

void Experiment::put_chunk(const ChunkResult& c, const std::map<int32_t, std::string>& pieces) {
  Transaction t(*db_);
  Statement tok(db_->handle(), "INSERT INTO tokens VALUES (?, ?, ?)");
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    tok.bind(1, int64_t{c.chunk})
        .bind(2, static_cast<int64_t>(i))
        .bind(3, int64_t{c.tokens[i]})
        .run();
  }
  Statement voc(db_->handle(), "INSERT OR IGNORE INTO vocab VALUES (?, ?)");
  for (const auto& [id, text] : pieces) voc.bind(1, int64_t{id}).bind(2, text).run();
  put_comparison(*db_, "diff", c.chunk, c.diff);
  if (c.floor) put_comparison(*db_, "floor", c.chunk, *c.floor);
  Statement res(db_->handle(), "INSERT INTO residuals VALUES (?, ?, ?, ?, ?, ?)");
  for (const auto& r : c.residuals) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(r.data.data());
    res.bind(1, int64_t{c.chunk}).bind(2, r.arm).bind(3, int64_t{r.layer});
    res.bind(4, static_cast<int64_t>(r.data.size() / static_cast<size_t>(r.width)))
        .bind(5, int64_t{r.width});
    res.bind_blob(6, {bytes, r.data.size() * sizeof(float)}).run();
  }
  if (c.transplants) {
    Statement tr(db_->handle(), "INSERT INTO transplants VALUES (?, ?, ?, ?, ?, ?)");
    for (const char* dir : {"denoise", "noise"}) {
      const auto& rows =
          std::string_view(dir) == "denoise" ? c.transplants->denoise : c.transplants->noise;
      for (const auto& r : rows) {
        tr.bind(1, int64_t{c.chunk}).bind(2, std::string_view(dir)).bind(3, int64_t{r.step});
        tr.bind(4, c.transplants->points.at(static_cast<size_t>(r.step - 1)));
        tr.bind(5, int64_t{r.pos}).bind(6, r.kl).run();
      }
    }
  }
  for (const auto& [name, rows] : c.analyses) put_analysis_rows(*db_, name, c.chunk, rows);
  // The chunks row goes last: its presence is what marks the chunk finished.
  Statement(db_->handle(), "INSERT INTO chunks VALUES (?, ?, ?)")
      .bind(1, int64_t{c.chunk})
      .bind(2, static_cast<int64_t>(c.tokens.size()))
      .bind(3, c.seconds)
      .run();
  // What resume checks before it adds to the file.
  set_meta(chunk_hash_key(c.chunk), chunk_sha256(*db_, *this, c.chunk));
  t.commit();
}

std::vector<int> Experiment::finished_chunks() const {
  if (!db_) throw RuntimeError("'" + path_ + "' is not open");  // a failed publish() closed it
  std::vector<int> out;
  Statement q(db_->handle(), "SELECT chunk FROM chunks ORDER BY chunk");
  while (q.step()) out.push_back(static_cast<int>(q.integer(0)));
  return out;
}

// The most restore points a run has (two per layer and the embedding, for thousands of
// layers): a stored step beyond it is damage, not a model.
constexpr int64_t kMaxSteps = int64_t{1} << 16;
constexpr int64_t kMaxLayers = int64_t{1} << 15;
constexpr int64_t kMaxWidth = int64_t{1} << 20;  // a residual row: n_embd

// Every value read back is checked against what a run can write: a tampered or damaged file
// gets one line naming what is wrong, never an out-of-range index further on.
static InputError damaged(const std::string& path, int chunk, const std::string& what) {
  return InputError("'" + path + "' is damaged: chunk " + std::to_string(chunk) + " " + what);
}

static bool finite_real(const Statement& q, int col) {
  return q.type(col) == SQLITE_FLOAT || q.type(col) == SQLITE_INTEGER
             ? std::isfinite(q.real(col))
             : false;
}

static std::optional<Comparison> read_comparison(Database& db, const std::string& path,
                                                 const char* name, int chunk, int64_t n_tokens) {
  Comparison c;
  Statement pos(db.handle(),
                "SELECT pos, target_id, scored, kl, nll_a, nll_b, top5_a, top5_b FROM positions"
                " WHERE comparison = ? AND chunk = ? ORDER BY pos");
  pos.bind(1, std::string_view(name)).bind(2, int64_t{chunk});
  while (pos.step()) {
    const int64_t p = pos.integer(0);
    // Position p predicts token p + 1: the last token predicts nothing.
    if (p < 0 || p >= n_tokens - 1)
      throw damaged(path, chunk, fmt::format("has a {} position {} outside its {} tokens", name,
                                             p, n_tokens));
    for (int col = 3; col <= 5; ++col) {
      if (!finite_real(pos, col)) {
        throw damaged(path, chunk, fmt::format("position {} ({}) holds a non-finite or missing "
                                               "{}",
                                               p, name, col == 3 ? "KL" : "NLL"));
      }
    }
    analysis::PositionRow r;
    r.pos = static_cast<int>(p);
    r.target = static_cast<int32_t>(pos.integer(1));
    r.scored = pos.integer(2) != 0;
    r.score.kl = pos.real(3);
    r.score.nll_a = pos.real(4);
    r.score.nll_b = pos.real(5);
    const auto top_a = parse_top(pos.text(6)), top_b = parse_top(pos.text(7));
    if (!top_a || !top_b)
      throw damaged(path, chunk, fmt::format("position {} ({}) has a malformed top-5", p, name));
    r.score.top_a = *top_a;
    r.score.top_b = *top_b;
    c.positions.push_back(r);
  }
  if (c.positions.empty()) return std::nullopt;
  Statement lay(db.handle(),
                "SELECT layer, pos, rel_err, cosine, max_abs FROM layers"
                " WHERE comparison = ? AND chunk = ? ORDER BY layer, pos");
  lay.bind(1, std::string_view(name)).bind(2, int64_t{chunk});
  while (lay.step()) {
    const int64_t layer = lay.integer(0), p = lay.integer(1);
    if (layer < 0 || layer >= kMaxLayers || p < 0 || p >= n_tokens) {
      throw damaged(path, chunk,
                    fmt::format("has a {} residual row for layer {} position {}", name, layer, p));
    }
    for (int col = 2; col <= 4; ++col) {
      if (!finite_real(lay, col)) {
        throw damaged(path, chunk, fmt::format("layer {} position {} ({}) holds a non-finite or "
                                               "missing residual statistic",
                                               layer, p, name));
      }
    }
    analysis::LayerRow l;
    l.layer = static_cast<int>(layer);
    l.pos = static_cast<int>(p);
    l.diff.rel_err = lay.real(2);
    l.diff.cosine = lay.real(3);
    l.diff.max_abs = lay.real(4);
    c.layers.push_back(l);
  }
  return c;
}

ChunkResult Experiment::read_chunk(int chunk) const {
  ChunkResult c;
  c.chunk = chunk;
  Statement s(db_->handle(), "SELECT seconds, n_tokens FROM chunks WHERE chunk = ?");
  s.bind(1, int64_t{chunk});
  if (!s.step())
    throw RuntimeError("chunk " + std::to_string(chunk) + " is not in '" + path_ + "'");
  c.seconds = s.real(0);
  const int64_t n_tokens = s.integer(1);
  Statement tok(db_->handle(), "SELECT pos, token_id FROM tokens WHERE chunk = ? ORDER BY pos");
  tok.bind(1, int64_t{chunk});
  while (tok.step()) {
    if (tok.integer(0) != static_cast<int64_t>(c.tokens.size()))
      throw damaged(path_, chunk, "has a gap or a stray row in its tokens");
    c.tokens.push_back(static_cast<int32_t>(tok.integer(1)));
  }
  if (c.tokens.empty() || n_tokens != static_cast<int64_t>(c.tokens.size())) {
    throw damaged(path_, chunk, fmt::format("says it has {} tokens, and {} are stored", n_tokens,
                                            c.tokens.size()));
  }
  c.diff = read_comparison(*db_, path_, "diff", chunk, n_tokens).value_or(Comparison{});
  c.floor = read_comparison(*db_, path_, "floor", chunk, n_tokens);
  Statement tr(db_->handle(),
               "SELECT direction, step, point, pos, kl FROM transplants WHERE chunk = ?"
               " ORDER BY direction, step, pos");
  tr.bind(1, int64_t{chunk});
  while (tr.step()) {
    if (!c.transplants) c.transplants = analysis::Transplants{};
    auto& t = *c.transplants;
    const std::string direction = tr.text(0);
    const int64_t step = tr.integer(1), p = tr.integer(3);
    if (direction != "denoise" && direction != "noise")
      throw damaged(path_, chunk, "has a transplant of direction '" + direction + "'");
    if (step < 1 || step > kMaxSteps || p < 0 || p >= n_tokens || tr.text(2).empty())
      throw damaged(path_, chunk, fmt::format("has a transplant row at step {} position {}",
                                              step, p));
    if (!finite_real(tr, 4))
      throw damaged(path_, chunk, fmt::format("holds a non-finite transplant KL at step {} "
                                              "position {}",
                                              step, p));
    const auto k = static_cast<size_t>(step - 1);
    if (t.points.size() <= k) t.points.resize(k + 1);
    if (!t.points[k].empty() && t.points[k] != tr.text(2))
      throw damaged(path_, chunk, fmt::format("names step {} two ways", step));
    t.points[k] = tr.text(2);
    (direction == "denoise" ? t.denoise : t.noise)
        .push_back({static_cast<int>(step), static_cast<int>(p), tr.real(4)});
  }
  if (c.transplants) {
    for (size_t k = 0; k < c.transplants->points.size(); ++k) {
      if (c.transplants->points[k].empty())
        throw damaged(path_, chunk, fmt::format("has no transplant rows at step {}", k + 1));
    }
  }
  Statement res(
      db_->handle(),
      "SELECT arm, layer, width, data, n_tokens FROM residuals WHERE chunk = ? ORDER BY arm, layer");
  res.bind(1, int64_t{chunk});
  while (res.step()) {
    analysis::ResidualTensor r;
    r.arm = res.text(0);
    const int64_t layer = res.integer(1), width = res.integer(2), rows = res.integer(4);
    auto b = res.blob(3);
    // Both factors bounded first: their product cannot overflow.
    if ((r.arm != "a" && r.arm != "b") || layer < 0 || layer >= kMaxLayers || width < 1 ||
        width > kMaxWidth || rows < 1 || rows > n_tokens ||
        static_cast<uint64_t>(b.size()) != static_cast<uint64_t>(rows * width) * sizeof(float)) {
      throw damaged(path_, chunk, "has a saved residual whose shape does not match its data");
    }
    r.layer = static_cast<int>(layer);
    r.width = static_cast<int>(width);
    r.data.resize(b.size() / sizeof(float));
    std::memcpy(r.data.data(), b.data(), r.data.size() * sizeof(float));
    c.residuals.push_back(std::move(r));
  }
  c.analyses = read_analysis_rows(*db_, path_, chunk);
  return c;
}

std::vector<std::string> Experiment::analyses() const { return stored_analyses(*db_); }

std::vector<analysis::StoredRow> Experiment::analysis_rows(const std::string& name) const {
  return read_analysis(*db_, path_, name);
}

std::vector<ChunkResult> Experiment::read_all() const {
  std::vector<ChunkResult> out;
  for (int c : finished_chunks()) out.push_back(read_chunk(c));
  return out;
}

std::map<int32_t, std::string> Experiment::pieces() const {
  std::map<int32_t, std::string> out;
  Statement q(db_->handle(), "SELECT token_id, text FROM vocab");
  while (q.step()) out[static_cast<int32_t>(q.integer(0))] = q.text(1);
  return out;
}

// Canonical serialization (docs/experiment-format.md): every column as a tag byte and
// little-endian payload: 'N'; 'I' int64; 'R' IEEE-754 f64 bits; 'T'/'B' u64 length + bytes.
static void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

static std::string canonical_value(const Statement& q, int col) {
  std::string out;
  switch (q.type(col)) {
    case SQLITE_NULL:
      out = "N";
      break;
    case SQLITE_INTEGER:
      out = "I";
      append_u64(out, static_cast<uint64_t>(q.integer(col)));
      break;
    case SQLITE_FLOAT: {
      const double d = q.real(col);
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      out = "R";
      append_u64(out, bits);
      break;
    }
    case SQLITE_TEXT: {
      const std::string t = q.text(col);
      out = "T";
      append_u64(out, t.size());
      out += t;
      break;
    }
    default: {
      const auto blob = q.blob(col);
      out = "B";
      append_u64(out, blob.size());
      out.append(reinterpret_cast<const char*>(blob.data()), blob.size());
    }
  }
  return out;
}

// A value as a message shows it.
static std::string shown_value(const Statement& q, int col) {
  switch (q.type(col)) {
    case SQLITE_NULL:
      return "NULL";
    case SQLITE_INTEGER:
      return std::to_string(q.integer(col));
    case SQLITE_FLOAT:
      return fmt::format("{:.17g}", q.real(col));
    case SQLITE_TEXT: {
      const std::string t = q.text(col);
      return "'" + (t.size() > 60 ? t.substr(0, 60) + "…" : t) + "'";
    }
    default:
      return "<" + std::to_string(q.blob(col).size()) + " bytes>";
  }
}

std::string Experiment::compute_integrity() const {
  // For each table in the fixed order above, its name and a newline, then every row in key
  // order; meta rows with key 'integrity_sha256' are left out: the hash cannot cover itself.
  Sha256 md;
  // Then each plug-in analysis' table, by name (a file without them hashes as it always did).
  std::vector<TableDef> tables(std::begin(kTables), std::end(kTables));
  std::vector<std::string> names;
  for (const auto& a : stored_analyses(*db_)) names.push_back(analysis_table(a));
  for (const auto& n : names) tables.push_back({n.c_str(), "chunk, row", ""});
  for (const auto& table : tables) {
    md.update(table.name, std::strlen(table.name));
    md.update("\n", 1);
    std::string sql = std::string("SELECT * FROM ") + table.name;
    if (std::string_view(table.name) == "meta") sql += " WHERE key != 'integrity_sha256'";
    sql += std::string(" ORDER BY ") + table.order;
    Statement q(db_->handle(), sql);
    while (q.step()) {
      for (int col = 0; col < q.columns(); ++col) {
        const std::string v = canonical_value(q, col);
        md.update(v.data(), v.size());
      }
    }
  }
  return md.hex();
}

namespace {
// One stored row: where it is, its columns' names, canonical bytes and printed values.
struct Row {
  std::string where;  // "positions (diff, 0, 17)"
  std::vector<std::string> names, bytes, shown;
};
}  // namespace

// Every row that belongs to `chunk`, table by table in key order, with the vocabulary rows of
// the tokens it mentions. `with_seconds`: the chunk's run time, which a re-run never repeats.
static std::vector<Row> chunk_rows(Database& db, const Experiment& e, int chunk,
                                   bool with_seconds) {
  struct Part {
    const char* table;
    std::vector<std::string> key;  // the columns that name a row in messages, and order them
    std::string own_table = {};    // a plug-in analysis' table (then `table` is null)
  };
  static const Part kParts[] = {
      {"chunks", {"chunk"}},
      {"tokens", {"pos"}},
      {"positions", {"comparison", "pos"}},
      {"layers", {"comparison", "layer", "pos"}},
      {"transplants", {"direction", "step", "pos"}},
      {"residuals", {"arm", "layer"}},
  };
  std::vector<Row> rows;
  const auto collect = [&](const std::string& table, const std::vector<std::string>& key,
                           Statement& q) {
    while (q.step()) {
      Row r;
      std::string key_values;
      for (int col = 0; col < q.columns(); ++col) {
        const std::string name = q.name(col);
        if (name == "seconds" && !with_seconds) continue;
        r.names.push_back(name);
        r.bytes.push_back(canonical_value(q, col));
        r.shown.push_back(shown_value(q, col));
        if (std::find(key.begin(), key.end(), name) != key.end()) {
          key_values += (key_values.empty() ? "" : ", ") + r.shown.back();
        }
      }
      r.where = table + " (" + key_values + ")";
      rows.push_back(std::move(r));
    }
  };
  std::vector<Part> parts(std::begin(kParts), std::end(kParts));
  for (const auto& a : stored_analyses(db)) parts.push_back({nullptr, {"row"}, analysis_table(a)});
  for (const Part& p : parts) {
    const std::string table = p.table ? p.table : p.own_table;
    std::string order;
    for (const auto& k : p.key) order += (order.empty() ? "" : ", ") + k;
    Statement q(db.handle(),
                fmt::format("SELECT * FROM {} WHERE chunk = ? ORDER BY {}", table, order));
    q.bind(1, int64_t{chunk});
    collect(table, p.key, q);
  }
  std::set<int32_t> ids;
  const analysis::ChunkResult c = e.read_chunk(chunk);
  ids.insert(c.tokens.begin(), c.tokens.end());
  for (const Comparison* cmp : {&c.diff, c.floor ? &*c.floor : nullptr}) {
    if (cmp == nullptr) continue;
    for (const auto& r : cmp->positions) {
      ids.insert(r.score.top_a.id.begin(), r.score.top_a.id.end());
      ids.insert(r.score.top_b.id.begin(), r.score.top_b.id.end());
    }
  }
  Statement voc(db.handle(), "SELECT * FROM vocab WHERE token_id = ?");
  for (int32_t id : ids) {
    voc.bind(1, int64_t{id});
    collect("vocab", {"token_id"}, voc);
    voc.reset();
  }
  return rows;
}

static std::string chunk_hash_key(int chunk) { return "chunk_sha256/" + std::to_string(chunk); }

// What resume checks: the chunk's rows (with its run time) and the configuration they came
// from, hashed when the chunk was stored.
static std::string chunk_sha256(Database& db, const Experiment& e, int chunk) {
  Sha256 md;
  for (const char* key : {"kind", "config"}) {
    const std::string v = e.meta(key).value_or("");
    md.update(v.data(), v.size());
    md.update("\n", 1);
  }
  for (const Row& r : chunk_rows(db, e, chunk, true)) {
    for (const auto& b : r.bytes) md.update(b.data(), b.size());
  }
  return md.hex();
}

std::optional<std::string> Experiment::altered_chunks() const {
  const bool hashed = records_chunk_hashes();
  for (int c : finished_chunks()) {
    const auto recorded = meta(chunk_hash_key(c));
    if (!recorded) {
      if (!hashed) continue;  // an older file: nothing was recorded
      return "chunk " + std::to_string(c) + " has no recorded hash (rows added or edited by hand?)";
    }
    if (*recorded != chunk_sha256(*db_, *this, c)) {
      return "chunk " + std::to_string(c) +
             " was changed after it was stored (its rows no longer hash as recorded)";
    }
  }
  return std::nullopt;
}

bool Experiment::records_chunk_hashes() const { return meta("chunk_hashes").has_value(); }

std::optional<std::string> Experiment::first_difference(int chunk,
                                                        const Experiment& recomputed) const {
  const std::vector<Row> stored = chunk_rows(*db_, *this, chunk, false);
  const std::vector<Row> again = chunk_rows(*recomputed.db_, recomputed, chunk, false);
  for (size_t i = 0; i < std::min(stored.size(), again.size()); ++i) {
    const Row& s = stored[i];
    const Row& r = again[i];
    if (s.where != r.where && s.names == r.names) {
      // A key column differs: report the row as a whole.
      return "chunk " + std::to_string(chunk) + ": stored row " + s.where + ", recomputed " +
             r.where;
    }
    for (size_t k = 0; k < s.bytes.size() && k < r.bytes.size(); ++k) {
      if (s.bytes[k] != r.bytes[k]) {
        return "chunk " + std::to_string(chunk) + " " + s.where + " " + s.names[k] +
               ": stored " + s.shown[k] + ", recomputed " + r.shown[k];
      }
    }
  }
  if (stored.size() != again.size()) {
    return "chunk " + std::to_string(chunk) + ": " + std::to_string(stored.size()) +
           " stored rows, " + std::to_string(again.size()) + " recomputed";
  }
  return std::nullopt;
}

Experiment Experiment::in_memory() {
  auto db = std::make_unique<Database>(":memory:", true, true);
  write_header(*db);
  return Experiment(":memory:", std::move(db), -1);
}

void Experiment::seal() {
  set_meta("status", "complete");
  set_meta("integrity_sha256", compute_integrity());
}

}  // namespace hd::store
