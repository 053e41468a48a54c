#include "run/recommend_proof.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "analysis/summary.h"
#include "common/output_file.h"
#include "common/sha256.h"
#include "common/stop.h"
#include "errors.h"
#include "run/config.h"
#include "run/diff.h"
#include "store/experiment.h"

namespace hd::run {
namespace fs = std::filesystem;

RecipeChoice choose_recipe(const RecommendConfig& c, const RecipePlan& plan,
                           const std::vector<store::SensitivityRow>& rows) {
  RecipeChoice r;
  for (const auto& row : rows) {
    if (row.group_index == 0) r.base_kl = row.kl_calibration;
  }
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    analysis::GroupChoices gc{plan.groups[g].name, {{plan.base_label[g], plan.base_bytes[g], 0}}};
    for (const auto& row : rows) {
      if (row.group_index == static_cast<int>(g + 1) && row.status == "measured")
        gc.options.push_back({row.type, row.bytes, row.kl_calibration - r.base_kl});
    }
    r.groups.push_back(std::move(gc));
  }
  const uint64_t least = plan.fixed_bytes + analysis::smallest_bytes(r.groups);
  if (c.target_bytes > 0) {
    if (c.target_bytes < least)
      throw InputError(fmt::format("no recipe fits in {} bytes: the smallest, every group at its "
                                   "smallest type, takes {}",
                                   c.target_bytes, least));
    r.allocation = analysis::allocate_within_bytes(r.groups, c.target_bytes - plan.fixed_bytes);
  } else {
    const double best = r.base_kl + analysis::least_delta(r.groups);
    if (!(c.target_kl >= best))
      throw InputError(fmt::format("no recipe reaches a mean KL of {:.6g} on the calibration "
                                   "text: the least the candidates predict is {:.6g}",
                                   c.target_kl, best));
    r.allocation = analysis::allocate_within_kl(r.groups, c.target_kl - r.base_kl);
  }
  if (!r.allocation.feasible) throw InputError("no recipe meets the target");
  r.predicted_kl = r.base_kl + r.allocation.delta_kl;
  r.predicted_file_bytes = plan.fixed_bytes + r.allocation.bytes;
  return r;
}

std::map<std::string, std::string> recipe_types(const RecipePlan& plan, const RecipeChoice& choice) {
  std::map<std::string, std::string> types = plan.base_types;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const size_t pick = choice.allocation.choice[g];
    if (pick == 0) continue;  // the base's own types, mixed or not
    for (const auto& name : plan.groups[g].tensors) types[name] = choice.groups[g].options[pick].type;
  }
  return types;
}

std::string tensor_types_text(const std::vector<engine::TensorTypeOverride>& overrides) {
  std::string out;
  for (const auto& o : overrides) out += o.pattern + "=" + o.type + "\n";
  return out;
}

std::string make_recipe_model(const RecommendConfig& c, const RecipePlan& plan,
                              const RecipeChoice& choice, const std::string& out,
                              const OutputPolicy& policy) {
  const auto expected = recipe_types(plan, choice);
  engine::quantize_with_overrides(c.model, out, c.base, pinned_overrides(plan, expected), 0,
                                  policy);
  if (const auto wrong = types_not_taken(out, expected); !wrong.empty()) {
    std::string list;
    for (const auto& w : wrong) list += (list.empty() ? "" : "; ") + w;
    throw RuntimeError(fmt::format("{} override(s) did not take in {}: {}", wrong.size(), out,
                                   list));
  }
  return out;
}

namespace {

double bits_per_weight(const std::string& path) {
  double bytes = 0, n = 0;
  for (const auto& t : engine::gguf_layout(path).tensors) {
    bytes += static_cast<double>(t.bytes);
    n += static_cast<double>(t.n_elements);
  }
  return n > 0 ? 8 * bytes / n : NAN;
}

// The stock types to show beside the recipe: the base, and the nearest below and above the
// recipe's size (quantized once each and cached, as --b-quant does).
std::vector<std::pair<std::string, std::string>> stock_neighbours(const RecommendConfig& c,
                                                                  uint64_t size) {
  std::string below, above, below_path, above_path;
  uint64_t below_size = 0, above_size = UINT64_MAX;
  for (const std::string& t : engine::stock_file_types()) {
    const std::string path = engine::ensure_quantized(c.model, t, 0);
    const uint64_t s = fs::file_size(path);
    if (s <= size && s > below_size) below = t, below_path = path, below_size = s;
    if (s >= size && s < above_size) above = t, above_path = path, above_size = s;
  }
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  for (const std::string& t : {below, c.base, above}) {
    if (!t.empty() && seen.insert(t).second) out.emplace_back(t, "");
  }
  return out;
}

nlohmann::json held_out_row(const std::string& name, const std::string& diff_path,
                            const std::string& model_path) {
  const auto chunks = store::Experiment::open(diff_path, false).read_all();
  const analysis::Summary s = analysis::summarize(chunks);
  return {{"name", name},
          {"file", fs::path(diff_path).lexically_relative(fs::path(diff_path).parent_path().parent_path()).string()},
          {"bytes", fs::file_size(model_path)},
          {"bpw", bits_per_weight(model_path)},
          {"kl_mean", s.diff.kl.mean},
          {"kl_ci95", s.diff.kl.ci95},
          {"top1_change", s.diff.top1_change.mean},
          {"top1_change_ci95", s.diff.top1_change.ci95},
          {"ppl_a", s.diff.ppl_a},
          {"ppl_b", s.diff.ppl_b},
          {"floor_kl", s.has_floor ? s.noise.kl.mean : NAN},
          {"n_chunks", s.n_chunks}};
}

}  // namespace

namespace {

nlohmann::json groups_json(const RecipePlan& plan, const RecipeChoice& choice) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const auto& o = choice.groups[g].options[choice.allocation.choice[g]];
    out.push_back({{"group", plan.groups[g].name},
                   {"pattern", plan.groups[g].pattern},
                   {"tensors", plan.groups[g].tensors.size()},
                   {"base", plan.base_label[g]},
                   {"base_bytes", plan.base_bytes[g]},
                   {"type", o.type},
                   {"bytes", o.bytes},
                   {"delta_kl", o.delta_kl}});
  }
  return out;
}

// Each held-out diff: A against the model, on the held-out text, with both floors.
nlohmann::json held_out_diffs(const RecommendConfig& c, const std::string& recipe_model,
                              const std::string& dir, bool replace,
                              const std::string& command_line, const ProgressFn& progress) {
  fs::create_directories(fs::path(dir) / "held-out");
  std::vector<std::pair<std::string, std::string>> models = {{"recipe", recipe_model}};
  for (const auto& s : stock_neighbours(c, fs::file_size(recipe_model))) models.push_back(s);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [name, path] : models) {
    DiffConfig d;
    d.a.model = c.model;
    d.b.model = path;
    if (path.empty()) d.b_quant = name;
    d.text_file = c.held_out.path;
    d.token_ids = c.held_out.token_ids;
    d.chunk = c.chunk;
    d.max_chunks = c.held_out_chunks;
    const std::string out = (fs::path(dir) / "held-out" / (name + ".hdy")).string();
    progress("held-out: A vs " + name + " -> " + out);
    // A diff stopped between its chunks returns with chunks missing: the report must not be
    // sealed with its numbers (it stays unsealed, and resume runs the proof again).
    if (diff_run(d, out, replace, command_line, [](const Progress&) {}).missing != 0 ||
        stop_requested())
      throw Stopped("stopped during the held-out diffs: finish with heterodyne recommend --resume " +
                    (fs::path(dir) / "report.hdy").string());
    const std::string model = path.empty() ? engine::ensure_quantized(c.model, name, 0) : path;
    rows.push_back(held_out_row(name, out, model));
  }
  return rows;
}

}  // namespace

nlohmann::json prove_recipe(const RecommendConfig& c, const RecipePlan& plan,
                            const std::vector<store::SensitivityRow>& rows, const Measurer& m,
                            const std::string& dir, bool replace, const std::string& command_line,
                            const ProgressFn& progress) {
  const RecipeChoice choice = choose_recipe(c, plan, rows);
  const auto overrides = pinned_overrides(plan, recipe_types(plan, choice));
  const std::string report = (fs::path(dir) / "report.hdy").string();
  const std::vector<std::string> inputs = {c.model, c.calibration.path, c.held_out.path, report};
  {
    OutputFile types((fs::path(dir) / "tensor-types.txt").string(), OutputPolicy(replace, inputs));
    const std::string text = tensor_types_text(overrides);
    types.write(text.data(), text.size());
    types.commit();
  }
  const std::string model = make_recipe_model(c, plan, choice, (fs::path(dir) / "model.gguf").string(),
                                              OutputPolicy(replace, inputs));
  if (fs::file_size(model) != choice.predicted_file_bytes)
    throw RuntimeError(fmt::format("{} has {} bytes where its types predict {}: the recipe's size "
                                   "is not what was chosen",
                                   model, fs::file_size(model), choice.predicted_file_bytes));
  size_t moved = 0;
  for (size_t g = 0; g < plan.groups.size(); ++g) moved += choice.allocation.choice[g] != 0;
  progress(fmt::format("recipe: {} of {} groups moved from the base, every tensor's type read "
                       "back from {}",
                       moved, plan.groups.size(), model));
  const TextScore measured = m.score(model, m.calibration());
  std::vector<double> calib, held;
  for (const auto& r : rows) {
    if (r.group_index > 0 && r.status == "measured") {
      calib.push_back(r.kl_calibration);
      held.push_back(r.kl_held_out);
    }
  }
  nlohmann::json target = c.target_bytes > 0
                              ? nlohmann::json{{"size", c.target_size}, {"bytes", c.target_bytes}}
                              : nlohmann::json{{"kl", c.target_kl}};
  return {{"base", c.base},
          {"base_kl_calibration", choice.base_kl},
          {"fixed_bytes", plan.fixed_bytes},
          {"target", target},
          {"groups", groups_json(plan, choice)},
          {"overrides", overrides.size()},
          {"groups_moved", moved},
          {"predicted", {{"file_bytes", choice.predicted_file_bytes},
                         {"kl_calibration", choice.predicted_kl}}},
          {"measured", {{"file_bytes", fs::file_size(model)},
                        {"kl_calibration", measured.kl_mean},
                        {"top1_change_calibration", measured.top1_change_rate}}},
          {"model", {{"file", "model.gguf"}, {"sha256", sha256_file(model)},
                     {"tensors_read_back", plan.base.tensors.size()}}},
          {"rank_correlation", {{"spearman", analysis::spearman(calib, held)},
                                {"variants", calib.size()}}},
          {"held_out", held_out_diffs(c, model, dir, replace, command_line, progress)}};
}

}  // namespace hd::run
