// heterodyne calibrate --reference ref/ [--safety 2] [--jitter-floor 1e-3]
// heterodyne check --reference ref/ --model m2.gguf [settings] [--allow-model-change]
//                  [--jitter-floor X] [--format human|markdown|json|junit] [--decode N]
//                  [--per-head] [--json-out FILE]
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/arm_flags.h"
#include "cli/commands.h"
#include "common/output_file.h"
#include "errors.h"
#include "run/gate.h"

namespace hd::cli {
namespace {

std::string concentration_text(const nlohmann::json& c) {
  if (c.is_null()) return "-";
  if (c.is_string()) return c.get<std::string>();
  return fmt::format("{:.3g}", c.get<double>());
}

std::string heads_text(const nlohmann::json& heads_over) {
  std::string s;
  for (const auto& h : heads_over) s += (s.empty() ? "" : ",") + std::to_string(h.get<int>());
  return s.empty() ? "-" : s;
}

// "first head divergence: kqv_out-0, heads 1,3 over; worst head 3, concentration 12.5"
std::string first_head_line(const nlohmann::json& r) {
  if (!r.contains("first_divergent_head")) return "";
  const auto& h = r["first_divergent_head"];
  if (h.is_null()) return "no head over its tap's tolerance";
  return fmt::format("first layer with a divergent head: {} (layer {}), heads {} over; worst head "
                     "{}, concentration {}",
                     h["tap"].get<std::string>(), h["layer"].get<int>(),
                     heads_text(h["heads_over"]), h["worst_head"].get<int>(),
                     concentration_text(h["concentration"]));
}

void print_heads(const nlohmann::json& r) {
  if (r["per_head"].empty()) return;
  std::cout << fmt::format("\n{:<20} {:>6} {:>12} {:>12} {:>14}  {}\n", "attention (per head)",
                           "worst", "max |Δ|", "median", "concentration", "heads over");
  for (const auto& h : r["per_head"]) {
    const double worst = h["max_abs"][h["worst_head"].get<size_t>()].get<double>();
    std::cout << fmt::format("{:<20} {:>6} {:>12.4g} {:>12.4g} {:>14}  {}\n",
                             h["tap"].get<std::string>(), h["worst_head"].get<int>(), worst,
                             h["median"].get<double>(), concentration_text(h["concentration"]),
                             heads_text(h["heads_over"]));
  }
  std::cout << first_head_line(r) << "\n";
}

void print_check(const nlohmann::json& r) {
  std::cout << fmt::format("{:<22} {:>12} {:>12} {:>10} {:>12}  {}\n", "tap", "max |Δ|", "mean |Δ|",
                           "rel err", "tolerance", "");
  for (const auto& t : r["taps"]) {
    std::cout << fmt::format("{:<22} {:>12.4g} {:>12.4g} {:>10.3g} {:>12.4g}  {}\n",
                             t["name"].get<std::string>(), t["max_abs"].get<double>(),
                             t["mean_abs"].get<double>(), t["rel_err"].get<double>(),
                             t["tolerance"].get<double>(), t["over"].get<bool>() ? "OVER" : "");
  }
  print_heads(r);
  std::cout << (r["passed"].get<bool>() ? std::string("\npassed: every tap within its tolerance\n")
                                        : "\nFAILED: first divergent tap " +
                                              r["first_divergent_tap"].get<std::string>() + "\n");
}

// For a pull-request comment: a verdict line, then the taps as a table (over ones in bold).
void print_markdown(const nlohmann::json& r) {
  std::cout << (r["passed"].get<bool>()
                    ? std::string(
                          "### heterodyne check: passed\n\nEvery tap is within its tolerance.\n\n")
                    : "### heterodyne check: FAILED\n\nFirst divergent tap: **`" +
                          r["first_divergent_tap"].get<std::string>() + "`**\n\n");
  std::cout << "| tap | max \\|Δ\\| | mean \\|Δ\\| | rel err | tolerance | "
               "|\n|---|---:|---:|---:|---:|---|\n";
  for (const auto& t : r["taps"]) {
    const bool over = t["over"].get<bool>();
    std::cout << fmt::format("| `{}` | {:.4g} | {:.4g} | {:.3g} | {:.4g} | {} |\n",
                             t["name"].get<std::string>(), t["max_abs"].get<double>(),
                             t["mean_abs"].get<double>(), t["rel_err"].get<double>(),
                             t["tolerance"].get<double>(), over ? "**over**" : "");
  }
  if (r.contains("first_divergent_head")) std::cout << "\n" << first_head_line(r) << ".\n";
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// One test case per tap; a tap over its tolerance is a failure with its numbers.
void print_junit(const nlohmann::json& r) {
  int failures = 0;
  for (const auto& t : r["taps"]) failures += t["over"].get<bool>() ? 1 : 0;
  std::cout << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  std::cout << fmt::format("<testsuite name=\"heterodyne check\" tests=\"{}\" failures=\"{}\">\n",
                           r["taps"].size(), failures);
  for (const auto& t : r["taps"]) {
    const std::string name = xml_escape(t["name"].get<std::string>());
    std::cout << fmt::format("  <testcase classname=\"heterodyne.check\" name=\"{}\"", name);
    if (!t["over"].get<bool>()) {
      std::cout << "/>\n";
      continue;
    }
    std::cout << fmt::format(
        ">\n    <failure message=\"max |delta| {:.4g} over tolerance {:.4g}\">mean |delta| {:.4g}, "
        "relative error {:.3g}</failure>\n  </testcase>\n",
        t["max_abs"].get<double>(), t["tolerance"].get<double>(), t["mean_abs"].get<double>(),
        t["rel_err"].get<double>());
  }
  std::cout << "</testsuite>\n";
}

}  // namespace

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
    bool force = false;
    ArmFlags flags;
  };
  auto o = std::make_shared<CheckOpts>();
  CLI::App* k = app.add_subcommand(
      "check", "compare an arm with a reference: exit 0 pass, 1 divergence, 2 bad configuration");
  k->add_option("--reference", o->cfg.reference, "directory written by capture")->required();
  k->add_option("--model,-m", o->model, "the candidate GGUF")->required();
  k->add_flag("--allow-model-change", o->cfg.allow_model_change,
              "compare a different file (e.g. a quantized candidate against an f16 reference)");
  k->add_option("--jitter-floor", o->cfg.jitter_floor,
                "loosen every tolerance to at least this x max |ref|")
      ->check(finite_number(0, true));
  k->add_option("--decode", o->cfg.decode_steps,
                "compare this many of the reference's decode steps (default: all it has)")
      ->check(CLI::NonNegativeNumber);
  k->add_flag("--per-head", o->cfg.per_head,
              "split each attention output (kqv_out) into heads: worst head, concentration");
  k->add_option("--format", o->format, "human | markdown | json | junit")
      ->check(CLI::IsMember({"human", "markdown", "json", "junit"}))
      ->capture_default_str();
  k->add_option("--json-out", o->json_out,
                "also write the JSON report to this file (one run, two reports: CI)");
  k->add_flag("--force", o->force, "replace an existing --json-out file");
  add_single_arm_flags(*k, o->flags);
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
      print_markdown(r);
    } else if (o->format == "junit") {
      print_junit(r);
    } else {
      print_check(r);
    }
    ctx.exit_code = r["passed"].get<bool>() ? 0 : 1;
  });
}

}  // namespace hd::cli
