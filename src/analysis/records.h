// The rows a diff produces for one chunk: what the store keeps, verify recomputes and show
// summarizes. Plain data, no behaviour.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "analysis/kl.h"
#include "analysis/residual.h"

namespace hd::analysis {

// Position `pos` of a chunk: the logits there predict token `target` (the chunk's token pos+1).
struct PositionRow {
  int pos = 0;
  int32_t target = 0;
  bool scored = false;
  PositionScore score;
};

// Residual difference after layer `layer` (point l_out-<layer>) at position `pos`.
struct LayerRow {
  int layer = 0;
  int pos = 0;
  ResidualDiff diff;
};

// One pair of arms compared on one chunk: A vs B (the diff), A vs A re-split or B vs B re-split
// (the floors).
struct Comparison {
  std::vector<PositionRow> positions;
  std::vector<LayerRow> layers;
};

// A full residual tensor, kept only with --save-residuals: [n_tokens][width] f32.
struct ResidualTensor {
  std::string arm;  // "a" or "b"
  int layer = 0;
  int width = 0;
  std::vector<float> data;
};

// Transplants on one chunk. Step k (1-based) is restore point points[k-1]; step 0, "none",
// is not stored: D(none) is the diff's KL and N(none) is 0 by definition.
//   denoise: KL(A || B with A's tensor written at the point)
//   noise:   KL(A || A with B's tensor written at the point)
struct TransplantRow {
  int step = 0;
  int pos = 0;
  double kl = 0;
};
struct Transplants {
  std::vector<std::string> points;  // labels in forward order
  std::vector<TransplantRow> denoise, noise;
};

// One value of a plug-in analysis' row (analysis/plugin.h): INTEGER, REAL or TEXT.
using Cell = std::variant<int64_t, double, std::string>;
using CellRow = std::vector<Cell>;

struct ChunkResult {
  int chunk = 0;
  std::vector<int32_t> tokens;  // exactly what both arms evaluated (BOS already in place)
  Comparison diff;
  std::optional<Comparison> floor;    // A vs A′ (A re-split into other ubatches)
  std::optional<Comparison> floor_b;  // B vs B′, same split rule; absent in files from before
  std::vector<ResidualTensor> residuals;
  std::optional<Transplants> transplants;
  std::map<std::string, std::vector<CellRow>> analyses;  // plug-in name -> its rows, in order
  double seconds = 0;  // wall time; provenance only, never compared
};

// The comparisons a chunk holds: the diff, then the floors that were measured.
inline std::vector<const Comparison*> comparisons_of(const ChunkResult& c) {
  std::vector<const Comparison*> v{&c.diff};
  if (c.floor) v.push_back(&*c.floor);
  if (c.floor_b) v.push_back(&*c.floor_b);
  return v;
}

}  // namespace hd::analysis
