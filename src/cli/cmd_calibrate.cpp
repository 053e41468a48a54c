// heterodyne calibrate --reference ref/ [--safety 2] [--jitter-floor 1e-3]
#include "cli/commands.h"
#include "kinds/command_line/arm_flags.h"
#include "run/calibrate.h"

namespace hd::cli {

void add_calibrate(CLI::App& app, Context& ctx) {
  auto cal = std::make_shared<run::CalibrateConfig>();
  CLI::App* c = app.add_subcommand("calibrate",
                                   "tolerances for a reference from reruns that must not matter");
  c->add_option("--reference", cal->reference, "directory written by capture")->required();
  c->add_option("--safety", cal->safety, "multiplier on the largest observed |Δ|")
      ->capture_default_str()
      ->check(finite_number(0, false));
  c->add_option("--jitter-floor", cal->jitter_floor, "least atol, relative to max |ref|")
      ->capture_default_str()
      ->check(finite_number(0, true));
  c->add_flag("--force", cal->force, "replace the reference's existing tolerances.json");
  c->callback([cal, &ctx] {
    const auto tol = run::calibrate_reference(*cal);
    progress_line("wrote " + cal->reference + "/tolerances.json (" +
                  std::to_string(tol["runs"].size()) + " calibration runs; " +
                  tol["note"].get<std::string>() + ")");
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
