// heterodyne length-curve --a A.gguf [--b B.gguf] [settings, --a-… --b-…]
//                         --text-file T | --tokens IDS
//                         --lengths 16,64,256,1024 [--format human|json]
#include <iostream>

#include "kinds/command_line/arm_flags.h"
#include "cli/commands.h"
#include "errors.h"
#include "report/length_curve.h"
#include "run/length_curve.h"

namespace hd::cli {

void add_length_curve(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string a, b, format = "human";
    ArmFlags shared, own_a, own_b;
    InputFlags input;
    run::LengthCurveConfig cfg;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "length-curve", "final-layer error and KL between two arms at several prompt lengths");
  in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--a", o->a, "arm A's GGUF (the reference)")->required();
    cmd->add_option("--b", o->b, "arm B's GGUF (default: A's, with B's settings)");
    add_input_flags(*cmd, o->input, "the text both arms read ('-': standard input)");
    cmd->add_option("--lengths", o->cfg.lengths, "prompt lengths in tokens, increasing")
        ->required()
        ->delimiter(',');
    add_skip_unencodable(*cmd, o->cfg.skip_unencodable);
  });
  add_two_arm_flags(*cmd, o->shared, o->own_a, o->own_b);
  in_group(*cmd, "Output", [&] {
    cmd->add_option("--format", o->format, "human | json")
        ->check(CLI::IsMember({"human", "json"}))
        ->capture_default_str();
  });
  cmd->callback([o, &ctx] {
    run::LengthCurveConfig cfg = o->cfg;
    const run::InputPath input = o->input.required("length-curve");
    cfg.text_file = input.path;
    cfg.token_ids = input.token_ids;
    cfg.a = resolve_arm(o->a, o->shared, o->own_a);
    cfg.b = resolve_arm(o->b.empty() ? o->a : o->b, o->shared, o->own_b);
    const auto r = run::length_curve(cfg, progress_line);
    if (o->format == "json") {
      std::cout << r.dump(2) << "\n";
    } else {
      report::print_length_curve(std::cout, r);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
