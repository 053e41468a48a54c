// Which layer makes two completions part (generate): the prompt and the common prefix, teacher-
// forced through both arms as one batch; at its last position (which predicts the parting
// token) B is run again with A's tensor written at each restore point in turn: the embedding,
// then every layer's residual (proven points, engine/point_survey.h). Step k restores where B's
// top-1 is then A's. The verdict is the earliest step from which every later one restores: B's
// computation after it no longer parts, so the block just before it (or B's output head, where
// no copy of a layer restores) is what makes it part.
//
// Teacher forcing runs other kernels than the decode steps that generated the tokens: where A
// does not give its generated token there teacher-forced, or B gives it too, the file says so
// ("parts": false) and no step is run.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "engine/arm.h"
#include "engine/points.h"

namespace hd::kinds {

// {a_token, a_piece, a_top1, a_top1_piece, b_top1, b_piece, parts, and where parts: steps:
// [{point, layer, top1, piece, kl, restores}], verdict: {point, layer}} (layer -1: the
// embedding; n_layer: B's output head). `a_token` is the token A generated at the parting; a
// step restores where B's top-1 is then it. KL is KL(A || patched B) at the position.
nlohmann::json parting_transplant(engine::Arm& a, engine::Arm& b, const engine::PointMap& map,
                                  std::span<const int32_t> sequence, int32_t a_token);

}  // namespace hd::kinds
