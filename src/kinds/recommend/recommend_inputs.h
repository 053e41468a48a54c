// What every recommend run reads first: its configuration checked (before anything is loaded),
// its target resolved to bytes, and its texts read and cut into chunks.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/model.h"
#include "kinds/recommend/recommend.h"
#include "kinds/recommend/recommend_measure.h"
#include "run/input.h"

namespace hd::run {

// Refuses what no run can use, before anything is loaded; resolves the type spellings.
void check_config(RecommendConfig& c);

// A stock type's name as a size means that type's file size.
void resolve_target(RecommendConfig& c);

struct Loaded {
  std::shared_ptr<engine::Model> model;
  Input calibration, held_out;
  std::vector<std::vector<int32_t>> calibration_chunks, held_out_chunks, rank_chunks;
};

// Refuses a size target below the smallest recipe these types can make.
void check_target_fits(const RecommendConfig& c, const RecipePlan& plan);

// The texts (from the provenance's record when resuming or verifying: `prov`), the model and the
// chunks. InputError when a stored text tokenizes otherwise than when the run began.
Loaded load_inputs(const RecommendConfig& c, const nlohmann::json* prov,
                   const ProgressFn& progress);

}  // namespace hd::run
