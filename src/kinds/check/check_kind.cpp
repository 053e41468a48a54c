// The check kind's registration: its command, the CI gate (exit 0 pass, 1 divergence, 2 bad
// configuration; the report printed in the format asked, and with -o stored as an experiment),
// its stored result as show prints it, and its verify.
//
// heterodyne check --reference ref/ --model m2.gguf [settings] [--allow-model-change]
//                  [--jitter-floor X] [--format human|markdown|json|junit] [--decode N]
//                  [--per-head] [--all-taps] [--json-out FILE] [-o FILE.hdy]
#include <filesystem>
#include <iostream>

#include "common/output_file.h"
#include "errors.h"
#include "kinds/check/check.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/summary_kind.h"
#include "report/gate.h"

namespace hd::kinds {

namespace {

struct CheckOpts {
  CheckConfig cfg;
  std::string model, format = "human", json_out, out, resume;
  bool force = false, all_taps = false;
  cli::ArmFlags flags;
};

void add_check_flags(CLI::App* k, CheckOpts& o) {
  cli::in_group(*k, "Inputs", [&] {
    k->add_option("--reference", o.cfg.reference, "directory written by capture");
    k->add_option("--model,-m", o.model, "the candidate GGUF");
    k->add_flag("--allow-model-change", o.cfg.allow_model_change,
                "compare a different file (e.g. a quantized candidate against an f16 reference)");
    k->add_option("--decode", o.cfg.decode_steps,
                  "compare this many of the reference's decode steps (default: all it has)")
        ->check(CLI::NonNegativeNumber);
  });
  cli::in_group(*k, "Arms", [&] { cli::add_single_arm_flags(*k, o.flags); });
  cli::in_group(*k, "Analyses", [&] {
    k->add_option("--jitter-floor", o.cfg.jitter_floor,
                  "loosen every tolerance to at least this x max |ref|")
        ->check(cli::finite_number(0, true));
    k->add_flag("--per-head", o.cfg.per_head,
                "split each attention output (kqv_out) into heads: worst head, concentration");
  });
  cli::in_group(*k, "Output", [&] {
    k->add_option("--format", o.format, "human | markdown | json | junit")
        ->check(CLI::IsMember({"human", "markdown", "json", "junit"}))
        ->capture_default_str();
    k->add_flag("--all-taps", o.all_taps,
                "list every tap (human, markdown), not only those over their tolerance");
    k->add_option("--json-out", o.json_out,
                  "also write the JSON report to this file (one run, two reports: CI)");
    k->add_option("-o,--output", o.out,
                  "also store the check as an experiment file (show, verify, report, serve)");
    k->add_flag("--force", o.force, "replace an existing --json-out or -o file");
  });
  cli::in_group(*k, "Resume", [&] {
    k->add_option("--resume", o.resume, "seal a check file stopped while it was sealed");
  });
}

void print_result(const CheckOpts& o, const nlohmann::json& r) {
  if (o.format == "json") {
    std::cout << r.dump(2) << "\n";
  } else if (o.format == "markdown") {
    report::print_check_markdown(std::cout, r, o.all_taps);
  } else if (o.format == "junit") {
    report::print_check_junit(std::cout, r);
  } else {
    report::print_check(std::cout, r, o.all_taps);
  }
}

void add_check_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  auto o = std::make_shared<CheckOpts>();
  CLI::App* k = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
  add_check_flags(k, *o);
  k->callback([o, k, &ctx] {
    if (!o->resume.empty()) {  // the verdict of the file, printed and as the exit code
      cli::refuse_flags_besides_resume(*k);
      const int end = cli::run_or_resume(*k, {o->resume, "", {}, [&] {
        return check_resume(o->resume, ctx.command_line, cli::progress_line);
      }, nullptr});
      if (end != 0) {
        ctx.exit_code = end;
        return;
      }
      const nlohmann::json r = stored_check(o->resume);
      print_result(*o, r);
      ctx.exit_code = r["passed"].get<bool>() ? 0 : 1;
      return;
    }
    if (o->cfg.reference.empty()) throw InputError("check needs --reference DIR");
    if (o->model.empty()) throw InputError("check needs --model MODEL.gguf");
    o->cfg.arm = cli::resolve_arm(o->model, o->flags, cli::ArmFlags{});
    // The reports may be none of what check reads, nor the experiment file it writes.
    std::vector<std::string> read = {o->model, o->cfg.reference + "/manifest.json",
                                     o->cfg.reference + "/activations.safetensors",
                                     o->cfg.reference + "/tolerances.json"};
    if (!o->out.empty()) read.push_back(o->out);
    const OutputPolicy report_policy(o->force, read);
    if (!o->json_out.empty()) check_output_path(o->json_out, report_policy);
    std::error_code ec;  // neither exists yet, maybe: compared by the paths they resolve to
    if (!o->out.empty() && !o->json_out.empty() &&
        std::filesystem::weakly_canonical(o->out, ec) ==
            std::filesystem::weakly_canonical(o->json_out, ec))
      throw InputError("-o and --json-out name the same file");
    nlohmann::json r;
    if (o->out.empty()) {
      r = check_reference(o->cfg);
    } else {
      CheckConfig stored = o->cfg;
      stored.reference = cli::stored_path(o->cfg.reference);
      stored.arm.model = cli::stored_path(o->cfg.arm.model);
      const int end = cli::run_or_resume(*k, {"", o->out, {}, nullptr, [&] {
        return check_run(stored, o->out, o->force, ctx.command_line, cli::progress_line);
      }});
      if (end != 0) {  // stopped before the check was stored: nothing to report
        ctx.exit_code = end;
        return;
      }
      r = stored_check(o->out);
    }
    if (!o->json_out.empty()) write_output_file(o->json_out, r.dump(2) + "\n", report_policy);
    print_result(*o, r);
    ctx.exit_code = r["passed"].get<bool>() ? 0 : 1;
  });
}

}  // namespace

std::unique_ptr<const RunKind> make_check_kind() {
  return summary_kind(
      {kCheckKind,
       "compare an arm with a reference: exit 0 pass, 1 divergence, 2 bad configuration",
       add_check_command,
       check_verify,
       [](std::ostream& out, const report::LoadedResult& l) {
         report::print_check(out, l.result, /*all_taps=*/true);
       },
       nullptr, nullptr});
}

}  // namespace hd::kinds
