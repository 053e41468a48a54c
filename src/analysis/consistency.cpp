#include "analysis/consistency.h"

#include <set>

namespace hd::analysis {

std::optional<std::string> chunks_problem(const std::vector<ChunkResult>& chunks) {
  if (chunks.empty()) return std::nullopt;
  const ChunkResult& first = chunks.front();
  for (const ChunkResult& c : chunks) {
    const std::string where = "chunk " + std::to_string(c.chunk);
    if (c.transplants.has_value() != first.transplants.has_value())
      return where + " has transplants where chunk " + std::to_string(first.chunk) +
             (first.transplants ? " has" : " has none");
    if (c.transplants && c.transplants->points != first.transplants->points)
      return where + " has other restore points than chunk " + std::to_string(first.chunk);
    if (c.floor && c.floor->positions.size() != c.diff.positions.size())
      return where + " has floor rows that do not match its diff rows";
    if (c.floor_b && c.floor_b->positions.size() != c.diff.positions.size())
      return where + " has B's floor rows that do not match its diff rows";
    if (!c.transplants) continue;
    std::set<int> scored;
    for (const auto& p : c.diff.positions) scored.insert(p.pos);
    for (const auto* rows : {&c.transplants->denoise, &c.transplants->noise}) {
      for (const auto& r : *rows) {
        if (!scored.count(r.pos))
          return where + " has a transplant at position " + std::to_string(r.pos) +
                 ", which its diff has no row for";
        if (r.step < 1 || static_cast<size_t>(r.step) > c.transplants->points.size())
          return where + " has a transplant at step " + std::to_string(r.step);
      }
    }
  }
  return std::nullopt;
}

}  // namespace hd::analysis
