// The second half of `recommend`: from the stored sensitivity rows to the recipe (chosen by
// analysis/recipe.h), its files (tensor-types.txt, model.gguf with every type read back) and
// the held-out comparison with the stock types of nearest size.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/recipe.h"
#include "engine/quantize.h"
#include "kinds/recommend/recommend.h"
#include "kinds/recommend/recommend_measure.h"

namespace hd::run {

struct RecipeChoice {
  std::vector<analysis::GroupChoices> groups;  // option 0: the round's start's own types
  analysis::Allocation allocation;
  double base_kl = 0;  // the round's start's mean KL on the calibration text
  double predicted_kl = 0;
  uint64_t predicted_file_bytes = 0;
};

// The options the rows give each group and the allocation the target asks for. InputError when
// no recipe meets it (the message gives what the candidates reach).
RecipeChoice choose_recipe(const RecommendConfig& c, const RecipePlan& plan,
                           const std::vector<store::SensitivityRow>& rows, int round,
                           const Start& start);

// Every tensor's type in the recipe chosen from `start`.
std::map<std::string, std::string> recipe_types(const RecipePlan& plan, const Start& start,
                                                const RecipeChoice& choice);

// Where each of `rounds` rounds starts, from the rows of the rounds before it (a round's start
// needs only the rows of the rounds before).
std::vector<Start> round_starts(const RecommendConfig& c, const RecipePlan& plan,
                                const std::vector<store::SensitivityRow>& rows, int rounds);

// tensor-types.txt: one PATTERN=TYPE per line, as llama-quantize --tensor-type-file reads it
// (every tensor pinned: pinned_overrides).
std::string tensor_types_text(const std::vector<engine::TensorTypeOverride>& overrides);

// Makes model.gguf in `dir` from the recipe, reads every tensor's type back (RuntimeError
// naming each that did not take), and returns its path.
std::string make_recipe_model(const RecommendConfig& c, const RecipePlan& plan,
                              const std::map<std::string, std::string>& types,
                              const std::string& out, const OutputPolicy& policy);

// Everything after the sensitivities: the recipe's files, its KL on the calibration text
// against the prediction, the held-out diffs, the summary (meta "recommend").
nlohmann::json prove_recipe(const RecommendConfig& c, const RecipePlan& plan,
                            const std::vector<store::SensitivityRow>& rows, const Measurer& m,
                            const std::string& dir, bool replace, const std::string& command_line,
                            const ProgressFn& progress);

}  // namespace hd::run
