#include "analysis/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>
#include <variant>

namespace hd::analysis {

template <typename T>
static bool same_bits(const T& x, const T& y) {
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}

static std::optional<std::string> diff_number(const std::string& where, const char* field,
                                              double stored, double again) {
  if (same_bits(stored, again)) return std::nullopt;
  return fmt::format("{} {}: stored {:.17g}, recomputed {:.17g}", where, field, stored, again);
}

static std::optional<std::string> compare_top(const std::string& where, const char* arm,
                                              const TopK& s, const TopK& r) {
  for (size_t k = 0; k < s.id.size(); ++k) {
    if (s.id[k] != r.id[k]) {
      return fmt::format("{} top{}_{} id: stored {}, recomputed {}", where, k + 1, arm, s.id[k],
                         r.id[k]);
    }
    if (!same_bits(s.p[k], r.p[k])) {
      return fmt::format("{} top{}_{} p: stored {:.9g}, recomputed {:.9g}", where, k + 1, arm,
                         s.p[k], r.p[k]);
    }
  }
  return std::nullopt;
}

static std::optional<std::string> compare(const char* name, int chunk, const Comparison& s,
                                          const Comparison& r) {
  if (s.positions.size() != r.positions.size() || s.layers.size() != r.layers.size()) {
    return fmt::format("chunk {} {}: row counts differ", chunk, name);
  }
  for (size_t i = 0; i < s.positions.size(); ++i) {
    const auto& a = s.positions[i];
    const auto& b = r.positions[i];
    const std::string where = fmt::format("chunk {} pos {} ({})", chunk, a.pos, name);
    if (a.pos != b.pos || a.target != b.target || a.scored != b.scored) {
      return where + ": position, target or scored flag differs";
    }
    if (auto m = diff_number(where, "kl", a.score.kl, b.score.kl)) return m;
    if (auto m = diff_number(where, "nll_a", a.score.nll_a, b.score.nll_a)) return m;
    if (auto m = diff_number(where, "nll_b", a.score.nll_b, b.score.nll_b)) return m;
    if (auto m = compare_top(where, "a", a.score.top_a, b.score.top_a)) return m;
    if (auto m = compare_top(where, "b", a.score.top_b, b.score.top_b)) return m;
  }
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const auto& a = s.layers[i];
    const auto& b = r.layers[i];
    const std::string where =
        fmt::format("chunk {} layer {} pos {} ({})", chunk, a.layer, a.pos, name);
    if (a.layer != b.layer || a.pos != b.pos) return where + ": layer rows differ";
    if (auto m = diff_number(where, "rel_err", a.diff.rel_err, b.diff.rel_err)) return m;
    if (auto m = diff_number(where, "cosine", a.diff.cosine, b.diff.cosine)) return m;
    if (auto m = diff_number(where, "max_abs", a.diff.max_abs, b.diff.max_abs)) return m;
  }
  return std::nullopt;
}

// Plug-in rows: the same analyses, row for row, every value bitwise (a double by its bits).
static std::optional<std::string> analyses_mismatch(const ChunkResult& s, const ChunkResult& r) {
  // An analysis with no rows for a chunk stores nothing: absent and empty are the same.
  std::map<std::string, std::vector<CellRow>> a, b;
  for (const auto& [name, rows] : s.analyses) if (!rows.empty()) a[name] = rows;
  for (const auto& [name, rows] : r.analyses) if (!rows.empty()) b[name] = rows;
  for (const auto& [name, rows] : a) {
    const auto it = b.find(name);
    if (it == b.end())
      return fmt::format("chunk {}: analysis {} was not recomputed", s.chunk, name);
    if (it->second.size() != rows.size())
      return fmt::format("chunk {} analysis {}: row counts differ", s.chunk, name);
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& x = rows[i];
      const auto& y = it->second[i];
      bool same = x.size() == y.size();
      for (size_t k = 0; same && k < x.size(); ++k) {
        same = x[k].index() == y[k].index();
        if (same && std::holds_alternative<double>(x[k])) {
          const double u = std::get<double>(x[k]), v = std::get<double>(y[k]);
          // NaN is stored as NULL and read back as one NaN, whatever its bits were.
          same = (std::isnan(u) && std::isnan(v)) || std::memcmp(&u, &v, sizeof u) == 0;
        } else if (same) {
          same = x[k] == y[k];
        }
      }
      if (!same) return fmt::format("chunk {} analysis {} row {}: values differ", s.chunk, name, i);
    }
  }
  if (a.size() != b.size())
    return fmt::format("chunk {}: the recomputed chunk has other analyses", s.chunk);
  return std::nullopt;
}

std::optional<std::string> first_mismatch(const ChunkResult& s, const ChunkResult& r) {
  if (s.tokens != r.tokens) return fmt::format("chunk {}: tokens differ", s.chunk);
  if (auto m = compare("diff", s.chunk, s.diff, r.diff)) return m;
  if (s.floor.has_value() != r.floor.has_value())
    return fmt::format("chunk {}: floor presence differs", s.chunk);
  if (s.floor) {
    if (auto m = compare("floor", s.chunk, *s.floor, *r.floor)) return m;
  }
  if (s.floor_b.has_value() != r.floor_b.has_value())
    return fmt::format("chunk {}: B's floor presence differs", s.chunk);
  if (s.floor_b) {
    if (auto m = compare("floor_b", s.chunk, *s.floor_b, *r.floor_b)) return m;
  }
  if (s.transplants.has_value() != r.transplants.has_value()) {
    return fmt::format("chunk {}: transplants presence differs", s.chunk);
  }
  if (s.transplants) {
    if (s.transplants->points != r.transplants->points)
      return fmt::format("chunk {}: restore points differ", s.chunk);
    for (const bool d : {true, false}) {
      const auto& a = d ? s.transplants->denoise : s.transplants->noise;
      const auto& b = d ? r.transplants->denoise : r.transplants->noise;
      const char* dir = d ? "denoise" : "noise";
      if (a.size() != b.size()) return fmt::format("chunk {} {}: row counts differ", s.chunk, dir);
      for (size_t i = 0; i < a.size(); ++i) {
        const std::string where =
            fmt::format("chunk {} pos {} ({} at {})", s.chunk, a[i].pos, dir,
                        s.transplants->points[static_cast<size_t>(a[i].step - 1)]);
        if (a[i].step != b[i].step || a[i].pos != b[i].pos) return where + ": rows differ";
        if (auto m = diff_number(where, "kl", a[i].kl, b[i].kl)) return m;
      }
    }
  }
  if (s.residuals.size() != r.residuals.size())
    return fmt::format("chunk {}: residual tensors differ in number", s.chunk);
  for (size_t i = 0; i < s.residuals.size(); ++i) {
    const auto& a = s.residuals[i];
    const auto& b = r.residuals[i];
    if (a.arm != b.arm || a.layer != b.layer || a.data.size() != b.data.size() ||
        std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) != 0) {
      return fmt::format("chunk {}: saved residual of arm {} layer {} differs", s.chunk, a.arm,
                         a.layer);
    }
  }
  return analyses_mismatch(s, r);
}

}  // namespace hd::analysis
