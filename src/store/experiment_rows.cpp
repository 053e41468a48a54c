// An experiment's rows: storing a chunk in one transaction, and reading it back with every
// value checked against what a run can write.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/utf8.h"
#include "errors.h"
#include "store/analysis_tables.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"

namespace hd::store {

using analysis::ChunkResult;
using analysis::Comparison;
using analysis::TopK;
using detail::chunk_hash_key;
using detail::chunk_sha256;

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
  for (const auto& [id, text] : pieces) {
    voc.bind(1, int64_t{id});
    // A piece that is not UTF-8 (a byte token, half a character) is a BLOB: a TEXT value must
    // be UTF-8, and Python's sqlite3 refuses to read the table otherwise.
    if (first_invalid_utf8(text)) {
      voc.bind_blob(2, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
    } else {
      voc.bind(2, text);
    }
    voc.run();
  }
  put_comparison(*db_, "diff", c.chunk, c.diff);
  if (c.floor) put_comparison(*db_, "floor", c.chunk, *c.floor);
  if (c.floor_b) put_comparison(*db_, "floor_b", c.chunk, *c.floor_b);
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

// A KL or NLL a run can store: finite, or +inf where an arm gives a token no probability (a
// -inf logit: KL(A || B) where B masks a token A does not, the NLL of a masked next token).
static bool finite_or_plus_inf(const Statement& q, int col) {
  return finite_real(q, col) ||
         (q.type(col) == SQLITE_FLOAT && q.real(col) == std::numeric_limits<double>::infinity());
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
      if (!finite_or_plus_inf(pos, col)) {
        throw damaged(path, chunk, fmt::format("position {} ({}) holds a NaN, -inf or missing "
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
  c.floor_b = read_comparison(*db_, path_, "floor_b", chunk, n_tokens);
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
    if (!finite_or_plus_inf(tr, 4))
      throw damaged(path_, chunk, fmt::format("holds a NaN, -inf or missing transplant KL at step {} "
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
  const LengthLimit bound(db_->handle(), kMaxResidualBytes);
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
  try {
    LengthLimit bound(db_->handle(), kMaxPieceBytes);
    Statement q(db_->handle(), "SELECT token_id, text FROM vocab");
    while (q.step()) out[static_cast<int32_t>(q.integer(0))] = q.text(1);
  } catch (const ValueTooLarge&) {
    throw InputError("'" + path_ + "' is damaged or not heterodyne's: a token's stored text is "
                     "larger than the " + std::to_string(kMaxPieceBytes >> 20) +
                     " MiB a reader takes from one field");
  }
  return out;
}


}  // namespace hd::store
