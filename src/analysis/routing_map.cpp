// routing's map (analysis/routing.h routing_map): a layer × position map of where B chose other
// experts than A, from the stored rows of analysis_routing.
#include <fmt/format.h>

#include <map>

#include "analysis/routing.h"

namespace hd::analysis {
namespace {

constexpr int kMapChunks = 4;   // chunks drawn; the tables above cover them all
constexpr int kPerLine = 64;    // positions per line of the map

// chunk → layer → pos → whether the experts changed (A vs B).
using Changes = std::map<int, std::map<int, std::map<int, bool>>>;

Changes changes_of(const std::vector<StoredRow>& rows) {
  Changes c;
  for (const auto& r : rows) {
    if (std::get<std::string>(r.cells.at(0)) != "b") continue;
    const int layer = static_cast<int>(std::get<int64_t>(r.cells.at(1)));
    const int pos = static_cast<int>(std::get<int64_t>(r.cells.at(2)));
    c[r.chunk][layer][pos] = std::get<int64_t>(r.cells.at(3)) != 0;
  }
  return c;
}

void map_lines(int chunk, const std::map<int, std::map<int, bool>>& layers,
               std::vector<std::string>& out) {
  const auto& first = layers.begin()->second;
  const int lo = first.begin()->first, hi = first.rbegin()->first;
  out.push_back(fmt::format("where B chose other experts (x), chunk {}, positions {}..{}:", chunk,
                            lo, hi));
  for (int start = lo; start <= hi; start += kPerLine) {
    if (hi - lo >= kPerLine) out.push_back(fmt::format("from position {}", start));
    for (const auto& [layer, at] : layers) {
      std::string line;
      for (int p = start; p < start + kPerLine && p <= hi; ++p) {
        auto it = at.find(p);
        line += it == at.end() ? " " : it->second ? "x" : "·";
      }
      out.push_back(fmt::format("layer {:>3}  {}", layer, line));
    }
  }
}

}  // namespace

std::vector<std::string> routing_map(const std::vector<StoredRow>& rows) {
  const Changes changes = changes_of(rows);
  std::vector<std::string> out;
  int drawn = 0;
  for (const auto& [chunk, layers] : changes) {
    if (drawn++ == kMapChunks) {
      out.push_back(fmt::format("(the map shows the first {} of {} chunks)", kMapChunks,
                                changes.size()));
      break;
    }
    if (!out.empty()) out.emplace_back();
    map_lines(chunk, layers, out);
  }
  return out;
}

Shortcut routing_shortcut(const std::string& diff_flag, const std::string& diff_help) {
  return {diff_flag, diff_help, "routing",
          "MoE routing alone: its tables and a layer × position map of expert changes"};
}

}  // namespace hd::analysis
