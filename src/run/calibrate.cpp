#include "run/calibrate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "analysis/tap_diff.h"
#include "common/output_file.h"
#include "common/sha256.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "errors.h"
#include "run/capture.h"
#include "run/reference.h"

namespace hd::run {
namespace fs = std::filesystem;

nlohmann::json calibrate_reference(const CalibrateConfig& c) {
  if (!std::isfinite(c.safety) || c.safety <= 0 || !std::isfinite(c.jitter_floor) ||
      c.jitter_floor < 0) {
    throw InputError("--safety must be a finite number > 0 and --jitter-floor one >= 0");
  }
  const Reference ref = load_reference(c.reference);
  const std::string tolerances = (fs::path(c.reference) / "tolerances.json").string();
  const OutputPolicy own(c.force, {(fs::path(c.reference) / "manifest.json").string(),
                                   (fs::path(c.reference) / "activations.safetensors").string()});
  check_output_path(tolerances, own);
  const engine::ArmSettings base = reference_arm(ref.manifest);
  auto model = engine::model_load(base.model);
  if (sha256_file(base.model) != ref.manifest["model"]["sha256"]) {
    throw InputError("the reference's model '" + base.model + "' has changed since capture");
  }
  // Runs that must not matter: an odd ubatch split of the tokens, a small one, other threads.
  // A model without a KV cache runs its batch in one piece: it has no other split to try.
  const int n = static_cast<int>(ref.tokens.size());
  const engine::PointMap points = engine::survey_points(model);  // once for every run below
  const bool splits = points.floor();
  std::vector<engine::ArmSettings> runs;
  for (int ub : {n / 2 + 1, 7}) {
    engine::ArmSettings s = base;
    s.n_ubatch = ub;
    if (splits && ub != base.n_ubatch && ub < n) runs.push_back(s);
  }
  engine::ArmSettings other_threads = base;
  other_threads.n_threads = base.n_threads == 1 ? 2 : 1;
  runs.push_back(other_threads);

  std::vector<double> observed(ref.activations.tensors.size(), 0.0);
  nlohmann::json run_list = nlohmann::json::array();
  for (const auto& s : runs) {
    const auto taps =
        capture_taps(model, s, ref.tokens, ref.decode_steps, ref.continuation, &points).tensors;
    if (taps.size() != observed.size()) throw RuntimeError("a calibration run has other taps");
    for (size_t i = 0; i < taps.size(); ++i) {
      observed[i] = std::max(
          observed[i], analysis::tap_delta(ref.activations.tensors[i].data, taps[i].data).max_abs);
    }
    run_list.push_back({{"n_ubatch", s.n_ubatch}, {"n_threads", s.n_threads}});
  }
  bool all_identical = true;
  nlohmann::json taps = nlohmann::json::array();
  for (size_t i = 0; i < observed.size(); ++i) {
    const auto& t = ref.activations.tensors[i];
    const double ref_max = analysis::tap_delta(t.data, t.data).ref_abs_max;
    const double from_runs = c.safety * observed[i], floor = c.jitter_floor * ref_max;
    all_identical &= observed[i] == 0;
    taps.push_back(
        {{"name", t.name},
         {"max_observed", observed[i]},
         {"ref_abs_max", ref_max},
         {"atol", std::max(from_runs, floor)},
         {"derived_from", from_runs >= floor && from_runs > 0 ? "observed" : "jitter_floor"}});
  }
  const nlohmann::json tol = {
      {"schema_version", 1},
      {"safety", c.safety},
      {"jitter_floor", c.jitter_floor},
      {"runs", run_list},
      {"all_bitwise_identical", all_identical},
      {"note", all_identical
                   ? "every calibration run was bitwise identical to the reference: "
                     "tolerances come from the jitter floor alone"
                   : "atol = max(safety x max observed |delta|, jitter_floor x max |ref|)"},
      {"taps", taps}};
  write_output_file(tolerances, tol.dump(2) + "\n", own);
  return tol;
}

}  // namespace hd::run
