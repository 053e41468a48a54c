// The runs of a floor exploration (kinds/floor/floor.h), one group at a time: a group is one
// flash-attention value × thread count, in the order `floor` explores them (flash attention
// outer, threads inner), and the unit floor stores, resumes and verifies by.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "analysis/kl.h"
#include "common/progress.h"
#include "engine/arm_settings.h"
#include "kinds/floor/floor.h"
#include "kinds/floor/floor_rows.h"

namespace hd::engine {
class Model;
}

namespace hd::run {

class FloorExplorer {
 public:
  FloorExplorer(const FloorConfig& c, std::shared_ptr<engine::Model> model,
                const std::vector<std::vector<int32_t>>& chunks, ProgressFn progress);

  int groups() const { return static_cast<int>(c_.flash_attn.size() * c_.threads.size()); }
  // Runs group g (each ubatch, and the group's run at the reference ubatch) and compares them.
  // Memory: two runs' logits for every chunk (chunks × chunk × n_vocab floats each).
  store::FloorGroup group(int g);
  // What meta "floor" holds besides the rows: the model, the reference run, the chunks.
  nlohmann::json header() const;
  // The reference run's settings (the reference ubatch, first thread count and flash attention).
  engine::ArmSettings reference_settings() const;

 private:
  using Logits = std::vector<std::vector<float>>;  // per chunk
  engine::ArmSettings settings(int ub, int threads, const std::string& fa) const;
  Logits run_all(const engine::ArmSettings& s) const;
  store::FloorRun compare(const engine::ArmSettings& s, const Logits& ref);

  const FloorConfig& c_;
  std::shared_ptr<engine::Model> model_;
  const std::vector<std::vector<int32_t>>& chunks_;
  ProgressFn progress_;
  int first_output_ = 0;
  std::set<int> effective_;           // the ubatches as they run (each clipped to the chunk)
  std::optional<Logits> global_ref_;  // computed with the first group run
  std::vector<float> logits_;
  analysis::ScoreScratch scratch_;
};

}  // namespace hd::run
