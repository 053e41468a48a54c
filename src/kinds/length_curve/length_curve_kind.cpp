// The length-curve kind's registration: its command (two arms' flags, the lengths; printed, or
// stored with -o and then resumable), its stored curve as show prints it, and its verify.
//
// heterodyne length-curve --a A.gguf [--b B.gguf] [settings, --a-… --b-…]
//                         --text-file T | --tokens IDS
//                         --lengths 16,64,256,1024 [--format human|json | -o FILE.hdy]
#include <iostream>

#include "errors.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/length_curve/length_curve.h"
#include "kinds/length_curve/length_curve_print.h"
#include "kinds/summary_kind.h"

namespace hd::kinds {

namespace {

void add_length_curve_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  struct Opts {
    std::string a, b, format = "human", out, resume;
    cli::ArmFlags shared, own_a, own_b;
    cli::InputFlags input;
    LengthCurveConfig cfg;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
  cli::in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--a", o->a, "arm A's GGUF (the reference)");
    cmd->add_option("--b", o->b, "arm B's GGUF (default: A's, with B's settings)");
    cli::add_input_flags(*cmd, o->input, "the text both arms read ('-': standard input)");
    cmd->add_option("--lengths", o->cfg.lengths, "prompt lengths in tokens, increasing")
        ->delimiter(',');
    cli::add_skip_unencodable(*cmd, o->cfg.skip_unencodable);
  });
  cli::add_two_arm_flags(*cmd, o->shared, o->own_a, o->own_b);
  cli::add_output_and_resume(*cmd, o->out, o->force, o->resume);
  cli::in_group(*cmd, "Output", [&] {
    cmd->add_option("--format", o->format, "human | json: the curve printed (without -o)")
        ->check(CLI::IsMember({"human", "json"}))
        ->capture_default_str();
  });
  cmd->callback([o, cmd, &ctx] {
    const run::InputPath input = o->input.given(std::string(kLengthCurveKind));
    // `stored`: paths made absolute, as a file keeps them; printed, they stay as given.
    const auto config = [&](bool stored) {
      if (o->cfg.lengths.empty()) throw InputError("length-curve needs --lengths L1,L2,…");
      const auto path = [&](const std::string& p) { return stored ? cli::stored_path(p) : p; };
      LengthCurveConfig cfg = o->cfg;
      cfg.text_file = path(input.path);
      cfg.token_ids = input.token_ids;
      cfg.a = cli::resolve_arm(path(o->a), o->shared, o->own_a);
      cfg.b = cli::resolve_arm(path(o->b.empty() ? o->a : o->b), o->shared, o->own_b);
      return cfg;
    };
    if (o->out.empty() && o->resume.empty()) {  // printed, stored nowhere
      if (o->a.empty()) throw InputError("length-curve needs --a MODEL.gguf");
      o->input.required(std::string(kLengthCurveKind));
      const nlohmann::json r = length_curve(config(false), cli::progress_line);
      if (o->format == "json") {
        std::cout << r.dump(2) << "\n";
      } else {
        print_length_curve(std::cout, r);
      }
      ctx.exit_code = 0;
      return;
    }
    if (cmd->count("--format"))
      throw InputError("--format is for a curve printed without -o: show FILE [--json] prints "
                       "a stored one");
    cli::ResumableRun r = cli::ResumableRun::of_arms(o->resume, o->out, o->a, input);
    r.resume_run = [&] {
      return length_curve_resume(o->resume, ctx.command_line, cli::progress_line, input);
    };
    r.new_run = [&] {
      return length_curve_run(config(true), o->out, o->force, ctx.command_line, cli::progress_line);
    };
    ctx.exit_code = cli::run_or_resume(*cmd, r);
  });
}

}  // namespace

std::unique_ptr<const RunKind> make_length_curve_kind() {
  return summary_kind(
      {kLengthCurveKind,
       "final-layer error and KL between two arms at several prompt lengths",
       add_length_curve_command,
       length_curve_verify,
       [](std::ostream& out, const report::LoadedResult& l) { print_length_curve(out, l.result); },
       nullptr, nullptr});
}

}  // namespace hd::kinds
