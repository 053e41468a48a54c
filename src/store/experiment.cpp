#include "store/experiment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/output_path.h"
#include "common/sha256.h"
#include "errors.h"
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

static int take_lock(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot open '" + path + "' for writing: " + std::strerror(errno));
  // flock locks are independent of SQLite's fcntl locks, so this guards whole runs, not
  // single transactions: a second writer is refused at once instead of interleaving chunks.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw InputError("'" + path + "' is being written by another heterodyne process");
  }
  return fd;
}

Experiment::Experiment(std::string path, std::unique_ptr<Database> db, int lock_fd)
    : path_(std::move(path)), db_(std::move(db)), lock_fd_(lock_fd) {}

Experiment::Experiment(Experiment&& o) noexcept
    : path_(std::move(o.path_)), db_(std::move(o.db_)), lock_fd_(o.lock_fd_) {
  o.lock_fd_ = -1;
}

Experiment::~Experiment() {
  db_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void Experiment::check_creatable(const std::string& path, bool replace) {
  check_output_path(path);
  std::error_code ec;
  if (fs::exists(path, ec) && !replace) {
    throw InputError("'" + path +
                     "' already exists: use --resume to finish it, or --force to replace it");
  }
}

Experiment Experiment::create(const std::string& path, bool replace) {
  check_creatable(path, replace);
  std::error_code ec;
  const fs::path p(path);
  if (fs::exists(p, ec)) {
    const int fd = take_lock(path);  // never replace a file another run is writing
    fs::remove(p, ec);
    fs::remove(path + "-journal", ec);
    ::close(fd);
  }
  auto db = std::make_unique<Database>(path, true, true);
  db->exec("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;");
  {
    Transaction t(*db);
    for (const auto& table : kTables) db->exec(table.ddl);
    Statement put(db->handle(), "INSERT INTO meta (key, value) VALUES (?, ?)");
    put.bind(1, std::string_view("format"))
        .bind(2, std::string_view("heterodyne-experiment"))
        .run();
    put.bind(1, std::string_view("schema_version")).bind(2, std::to_string(kSchemaVersion)).run();
    put.bind(1, std::string_view("status")).bind(2, std::string_view("running")).run();
    t.commit();
  }
  // SQLite creates the file on its first write, so the writer's lock comes after it.
  const int fd = take_lock(path);
  return Experiment(path, std::move(db), fd);
}

Experiment Experiment::open(const std::string& path, bool writable) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError("experiment file '" + path + "' does not exist");
  std::unique_ptr<Database> db;
  int fd = -1;
  if (writable) fd = take_lock(path);
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

static TopK parse_top(const std::string& s) {
  TopK t;
  const char* p = s.c_str();
  for (size_t k = 0; k < t.id.size(); ++k) {
    while (*p && *p != '-' && (*p < '0' || *p > '9')) ++p;
    char* end = nullptr;
    t.id[k] = static_cast<int32_t>(std::strtol(p, &end, 10));
    p = end;
    while (*p == ',' || *p == ' ') ++p;
    t.p[k] = std::strtof(p, &end);
    p = end;
  }
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
  // The chunks row goes last: its presence is what marks the chunk finished.
  Statement(db_->handle(), "INSERT INTO chunks VALUES (?, ?, ?)")
      .bind(1, int64_t{c.chunk})
      .bind(2, static_cast<int64_t>(c.tokens.size()))
      .bind(3, c.seconds)
      .run();
  t.commit();
}

std::vector<int> Experiment::finished_chunks() const {
  std::vector<int> out;
  Statement q(db_->handle(), "SELECT chunk FROM chunks ORDER BY chunk");
  while (q.step()) out.push_back(static_cast<int>(q.integer(0)));
  return out;
}

static std::optional<Comparison> read_comparison(Database& db, const char* name, int chunk) {
  Comparison c;
  Statement pos(db.handle(),
                "SELECT pos, target_id, scored, kl, nll_a, nll_b, top5_a, top5_b FROM positions"
                " WHERE comparison = ? AND chunk = ? ORDER BY pos");
  pos.bind(1, std::string_view(name)).bind(2, int64_t{chunk});
  while (pos.step()) {
    analysis::PositionRow r;
    r.pos = static_cast<int>(pos.integer(0));
    r.target = static_cast<int32_t>(pos.integer(1));
    r.scored = pos.integer(2) != 0;
    r.score.kl = pos.real(3);
    r.score.nll_a = pos.real(4);
    r.score.nll_b = pos.real(5);
    r.score.top_a = parse_top(pos.text(6));
    r.score.top_b = parse_top(pos.text(7));
    c.positions.push_back(r);
  }
  if (c.positions.empty()) return std::nullopt;
  Statement lay(db.handle(),
                "SELECT layer, pos, rel_err, cosine, max_abs FROM layers"
                " WHERE comparison = ? AND chunk = ? ORDER BY layer, pos");
  lay.bind(1, std::string_view(name)).bind(2, int64_t{chunk});
  while (lay.step()) {
    analysis::LayerRow l;
    l.layer = static_cast<int>(lay.integer(0));
    l.pos = static_cast<int>(lay.integer(1));
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
  Statement s(db_->handle(), "SELECT seconds FROM chunks WHERE chunk = ?");
  s.bind(1, int64_t{chunk});
  if (!s.step())
    throw RuntimeError("chunk " + std::to_string(chunk) + " is not in '" + path_ + "'");
  c.seconds = s.real(0);
  Statement tok(db_->handle(), "SELECT token_id FROM tokens WHERE chunk = ? ORDER BY pos");
  tok.bind(1, int64_t{chunk});
  while (tok.step()) c.tokens.push_back(static_cast<int32_t>(tok.integer(0)));
  c.diff = read_comparison(*db_, "diff", chunk).value_or(Comparison{});
  c.floor = read_comparison(*db_, "floor", chunk);
  Statement tr(db_->handle(),
               "SELECT direction, step, point, pos, kl FROM transplants WHERE chunk = ?"
               " ORDER BY direction, step, pos");
  tr.bind(1, int64_t{chunk});
  while (tr.step()) {
    if (!c.transplants) c.transplants = analysis::Transplants{};
    auto& t = *c.transplants;
    const auto step = static_cast<int>(tr.integer(1));
    if (t.points.size() < static_cast<size_t>(step)) t.points.resize(static_cast<size_t>(step));
    t.points[static_cast<size_t>(step - 1)] = tr.text(2);
    (tr.text(0) == "denoise" ? t.denoise : t.noise)
        .push_back({step, static_cast<int>(tr.integer(3)), tr.real(4)});
  }
  Statement res(
      db_->handle(),
      "SELECT arm, layer, width, data FROM residuals WHERE chunk = ? ORDER BY arm, layer");
  res.bind(1, int64_t{chunk});
  while (res.step()) {
    analysis::ResidualTensor r;
    r.arm = res.text(0);
    r.layer = static_cast<int>(res.integer(1));
    r.width = static_cast<int>(res.integer(2));
    auto b = res.blob(3);
    r.data.resize(b.size() / sizeof(float));
    std::memcpy(r.data.data(), b.data(), r.data.size() * sizeof(float));
    c.residuals.push_back(std::move(r));
  }
  return c;
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

// Canonical serialization (docs/experiment-format.md): for each table in the fixed order
// above, its name and a newline, then every row in key order, every column as a tag byte and
// little-endian payload: 'N'; 'I' int64; 'R' IEEE-754 f64 bits; 'T'/'B' u64 length + bytes.
// meta rows with key 'integrity_sha256' are left out: the hash cannot cover itself.
std::string Experiment::compute_integrity() const {
  Sha256 md;
  auto feed = [&](const void* p, size_t n) { md.update(p, n); };
  auto feed_u64 = [&](uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    feed(b, 8);
  };
  for (const auto& table : kTables) {
    feed(table.name, std::strlen(table.name));
    feed("\n", 1);
    std::string sql = std::string("SELECT * FROM ") + table.name;
    if (std::string_view(table.name) == "meta") sql += " WHERE key != 'integrity_sha256'";
    sql += std::string(" ORDER BY ") + table.order;
    Statement q(db_->handle(), sql);
    while (q.step()) {
      for (int col = 0; col < q.columns(); ++col) {
        switch (q.type(col)) {
          case SQLITE_NULL:
            feed("N", 1);
            break;
          case SQLITE_INTEGER:
            feed("I", 1);
            feed_u64(static_cast<uint64_t>(q.integer(col)));
            break;
          case SQLITE_FLOAT: {
            const double d = q.real(col);
            uint64_t bits;
            std::memcpy(&bits, &d, 8);
            feed("R", 1);
            feed_u64(bits);
            break;
          }
          case SQLITE_TEXT: {
            const std::string s = q.text(col);
            feed("T", 1);
            feed_u64(s.size());
            feed(s.data(), s.size());
            break;
          }
          default: {
            const auto b = q.blob(col);
            feed("B", 1);
            feed_u64(b.size());
            feed(b.data(), b.size());
          }
        }
      }
    }
  }
  return md.hex();
}

void Experiment::seal() {
  set_meta("status", "complete");
  set_meta("integrity_sha256", compute_integrity());
}

}  // namespace hd::store
