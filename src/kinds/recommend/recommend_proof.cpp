#include "kinds/recommend/recommend_proof.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "analysis/summary.h"
#include "common/output_file.h"
#include "common/sha256.h"
#include "common/stop.h"
#include "errors.h"
#include "run/config.h"
#include "kinds/diff/diff_run.h"
#include "store/experiment.h"

namespace hd::run {
namespace fs = std::filesystem;

RecipeChoice choose_recipe(const RecommendConfig& c, const RecipePlan& plan,
                           const std::vector<store::SensitivityRow>& rows, int round,
                           const Start& start) {
  RecipeChoice r;
  bool has_start = false;
  for (const auto& row : rows) {
    if (row.round == round && row.group_index == 0) r.base_kl = row.kl_calibration, has_start = true;
  }
  if (!has_start)
    throw InputError(fmt::format("round {} has no start row: the file is damaged", round));
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    analysis::GroupChoices gc{plan.groups[g].name, {{start.label[g], start.bytes[g], 0}}};
    for (const auto& row : rows) {
      if (row.round == round && row.group_index == static_cast<int>(g + 1) &&
          row.status == "measured")
        gc.options.push_back({row.type, row.bytes, row.kl_calibration - r.base_kl});
    }
    // By type, as the file orders the rows: a run, its resume and verify choose alike.
    std::sort(gc.options.begin() + 1, gc.options.end(),
              [](const auto& a, const auto& b) { return a.type < b.type; });
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
    const double least_kl = analysis::least_delta(r.groups);
    if (round == 0 && !(c.target_kl >= r.base_kl + least_kl))
      throw InputError(fmt::format("no recipe reaches a mean KL of {:.6g} on the calibration "
                                   "text: the least the candidates predict is {:.6g}",
                                   c.target_kl, r.base_kl + least_kl));
    // A later round starts at a recipe measured, not predicted: where that start is above what
    // round 0 predicted, the target may be out of reach from it. The round then takes the
    // least KL it can reach, and the summary says whether the target was met.
    r.allocation =
        analysis::allocate_within_kl(r.groups, std::max(c.target_kl - r.base_kl, least_kl));
  }
  if (!r.allocation.feasible) throw InputError("no recipe meets the target");
  r.predicted_kl = r.base_kl + r.allocation.delta_kl;
  r.predicted_file_bytes = plan.fixed_bytes + r.allocation.bytes;
  return r;
}

std::map<std::string, std::string> recipe_types(const RecipePlan& plan, const Start& start,
                                                const RecipeChoice& choice) {
  std::map<std::string, std::string> types = start.types;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const size_t pick = choice.allocation.choice[g];
    if (pick == 0) continue;  // the start's own types, mixed or not
    for (const auto& name : plan.groups[g].tensors) types[name] = choice.groups[g].options[pick].type;
  }
  return types;
}

std::vector<Start> round_starts(const RecommendConfig& c, const RecipePlan& plan,
                                const std::vector<store::SensitivityRow>& rows, int rounds) {
  std::vector<Start> starts = {start_at(plan, plan.base_types)};
  while (static_cast<int>(starts.size()) < rounds) {
    const int r = static_cast<int>(starts.size()) - 1;
    const RecipeChoice choice = choose_recipe(c, plan, rows, r, starts.back());
    starts.push_back(start_at(plan, recipe_types(plan, starts.back(), choice)));
  }
  return starts;
}

std::string tensor_types_text(const std::vector<engine::TensorTypeOverride>& overrides) {
  std::string out;
  for (const auto& o : overrides) out += o.pattern + "=" + o.type + "\n";
  return out;
}

std::string make_recipe_model(const RecommendConfig& c, const RecipePlan& plan,
                              const std::map<std::string, std::string>& expected,
                              const std::string& out, const OutputPolicy& policy) {
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
  const store::Experiment e = store::Experiment::open(diff_path, false);
  const auto prov = nlohmann::json::parse(e.meta("provenance").value_or("{}"));
  const analysis::Summary s = analysis::summarize(e.read_all(), prov.contains("floor_ubatch_2"));
  return {{"name", name},
          {"file", fs::path(diff_path).lexically_relative(fs::path(diff_path).parent_path().parent_path()).string()},
          {"bytes", fs::file_size(model_path)},
          {"bpw", bits_per_weight(model_path)},
          {"kl_mean", s.diff.kl.mean},  // over the positions where KL is finite:
          {"kl_infinite_positions", s.diff.n_kl_infinite},  // the others
          {"kl_ci95", s.diff.kl.ci95},
          {"top1_change", s.diff.top1_rate.rate},  // its 95 % interval, inside [0, 1]:
          {"top1_change_lo", s.diff.top1_rate.lo},  // null where the rate has none
          {"top1_change_hi", s.diff.top1_rate.hi},
          {"ppl_a", s.diff.ppl_a},
          {"ppl_b", s.diff.ppl_b},
          {"floor_kl", s.has_floor ? s.noise.kl.mean : NAN},
          {"n_chunks", s.n_chunks}};
}

}  // namespace

namespace {

bool measured_bytes_fit(const std::string& model, uint64_t target) {
  return fs::file_size(model) <= target;
}

nlohmann::json groups_json(const RecipePlan& plan, const RecipeChoice& choice) {
  const Start base = start_at(plan, plan.base_types);
  nlohmann::json out = nlohmann::json::array();
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const auto& o = choice.groups[g].options[choice.allocation.choice[g]];
    out.push_back({{"group", plan.groups[g].name},
                   {"pattern", plan.groups[g].pattern},
                   {"tensors", plan.groups[g].tensors.size()},
                   {"base", base.label[g]},
                   {"base_bytes", base.bytes[g]},
                   {"type", o.type},
                   {"bytes", o.bytes},
                   {"delta_kl", o.delta_kl},  // from the last round's start
                   {"start", choice.groups[g].options[0].type}});
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
    d.floor_chunks = "all";  // the held-out proof reads every chunk's floor, as before the sample
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
  const std::vector<Start> starts = round_starts(c, plan, rows, c.rounds);
  const int last = c.rounds - 1;
  const RecipeChoice choice = choose_recipe(c, plan, rows, last, starts.back());
  const auto types = recipe_types(plan, starts.back(), choice);
  const auto overrides = pinned_overrides(plan, types);
  const std::string report = (fs::path(dir) / "report.hdy").string();
  const std::vector<std::string> inputs = {c.model, c.calibration.path, c.held_out.path, report};
  {
    OutputFile file((fs::path(dir) / "tensor-types.txt").string(), OutputPolicy(replace, inputs));
    const std::string text = tensor_types_text(overrides);
    file.write(text.data(), text.size());
    file.commit();
  }
  const std::string model = make_recipe_model(c, plan, types, (fs::path(dir) / "model.gguf").string(),
                                              OutputPolicy(replace, inputs));
  if (fs::file_size(model) != choice.predicted_file_bytes)
    throw RuntimeError(fmt::format("{} has {} bytes where its types predict {}: the recipe's size "
                                   "is not what was chosen",
                                   model, fs::file_size(model), choice.predicted_file_bytes));
  size_t moved = 0;
  for (const auto& [name, type] : types) moved += plan.base_types.at(name) != type;
  progress(fmt::format("recipe: {} of {} tensors moved from the base, every tensor's type read "
                       "back from {}",
                       moved, overrides.size(), model));
  const TextScore measured = m.score(model, m.calibration());
  // Each round's recipe: predicted from its rows, measured as the next round's start (the last
  // one just now), so that every prediction is checked.
  nlohmann::json rounds = nlohmann::json::array();
  for (int r = 0; r < c.rounds; ++r) {
    const RecipeChoice ch = r == last ? choice : choose_recipe(c, plan, rows, r, starts[r]);
    double kl = measured.kl_mean;
    for (const auto& row : rows) {
      if (r < last && row.round == r + 1 && row.group_index == 0) kl = row.kl_calibration;
    }
    rounds.push_back({{"start_kl_calibration", ch.base_kl},
                      {"predicted_kl_calibration", ch.predicted_kl},
                      {"measured_kl_calibration", kl}});
  }
  std::vector<double> calib, held;
  for (const auto& r : rows) {
    if (r.round == 0 && r.group_index > 0 && r.status == "measured") {
      calib.push_back(r.kl_calibration);
      held.push_back(r.kl_held_out);
    }
  }
  nlohmann::json target = c.target_bytes > 0
                              ? nlohmann::json{{"size", c.target_size}, {"bytes", c.target_bytes}}
                              : nlohmann::json{{"kl", c.target_kl}};
  return {{"base", c.base},
          {"base_kl_calibration", rounds[0]["start_kl_calibration"]},
          {"fixed_bytes", plan.fixed_bytes},
          {"target", target},
          {"groups", groups_json(plan, choice)},
          {"overrides", overrides.size()},
          {"tensors_moved", moved},
          {"target_met", c.target_bytes > 0 ? measured_bytes_fit(model, c.target_bytes)
                                            : choice.predicted_kl <= c.target_kl},
          {"rounds", rounds},
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
