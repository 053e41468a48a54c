// heterodyne calibrate --reference ref/ [--safety 2] [--jitter-floor 1e-3]
// heterodyne check --reference ref/ --model m2.gguf [settings] [--allow-model-change]
//                  [--jitter-floor X] [--format human|markdown|json|junit] [--decode N]
//                  [--per-head] [--all-taps] [--json-out FILE]
#include <iostream>

#include "kinds/command_line/arm_flags.h"
#include "cli/commands.h"
#include "common/output_file.h"
#include "errors.h"
#include "report/gate.h"
#include "run/gate.h"

namespace hd::cli {

void add_gate(CLI::App& app, Context& ctx) {
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

  struct CheckOpts {
    run::CheckConfig cfg;
    std::string model, format = "human", json_out;
    bool force = false, all_taps = false;
    ArmFlags flags;
  };
  auto o = std::make_shared<CheckOpts>();
  CLI::App* k = app.add_subcommand(
      "check", "compare an arm with a reference: exit 0 pass, 1 divergence, 2 bad configuration");
  in_group(*k, "Inputs", [&] {
    k->add_option("--reference", o->cfg.reference, "directory written by capture")->required();
    k->add_option("--model,-m", o->model, "the candidate GGUF")->required();
    k->add_flag("--allow-model-change", o->cfg.allow_model_change,
                "compare a different file (e.g. a quantized candidate against an f16 reference)");
    k->add_option("--decode", o->cfg.decode_steps,
                  "compare this many of the reference's decode steps (default: all it has)")
        ->check(CLI::NonNegativeNumber);
  });
  in_group(*k, "Arms", [&] { add_single_arm_flags(*k, o->flags); });
  in_group(*k, "Analyses", [&] {
    k->add_option("--jitter-floor", o->cfg.jitter_floor,
                  "loosen every tolerance to at least this x max |ref|")
        ->check(finite_number(0, true));
    k->add_flag("--per-head", o->cfg.per_head,
                "split each attention output (kqv_out) into heads: worst head, concentration");
  });
  in_group(*k, "Output", [&] {
    k->add_option("--format", o->format, "human | markdown | json | junit")
        ->check(CLI::IsMember({"human", "markdown", "json", "junit"}))
        ->capture_default_str();
    k->add_flag("--all-taps", o->all_taps,
                "list every tap (human, markdown), not only those over their tolerance");
    k->add_option("--json-out", o->json_out,
                  "also write the JSON report to this file (one run, two reports: CI)");
    k->add_flag("--force", o->force, "replace an existing --json-out file");
  });
  k->callback([o, &ctx] {
    o->cfg.arm = resolve_arm(o->model, o->flags, ArmFlags{});
    // The report may be none of what check reads.
    const OutputPolicy report_policy(
        o->force, {o->model, o->cfg.reference + "/manifest.json",
                   o->cfg.reference + "/activations.safetensors",
                   o->cfg.reference + "/tolerances.json"});
    if (!o->json_out.empty()) check_output_path(o->json_out, report_policy);
    const auto r = run::check_reference(o->cfg);
    if (!o->json_out.empty()) write_output_file(o->json_out, r.dump(2) + "\n", report_policy);
    if (o->format == "json") {
      std::cout << r.dump(2) << "\n";
    } else if (o->format == "markdown") {
      report::print_check_markdown(std::cout, r, o->all_taps);
    } else if (o->format == "junit") {
      report::print_check_junit(std::cout, r);
    } else {
      report::print_check(std::cout, r, o->all_taps);
    }
    ctx.exit_code = r["passed"].get<bool>() ? 0 : 1;
  });
}

}  // namespace hd::cli
