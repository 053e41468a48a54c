// heterodyne length-curve --a A.gguf [--b B.gguf] [settings, --a-… --b-…] --text-file T
//                         --lengths 16,64,256,1024 [--format human|json]
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cli/arm_flags.h"
#include "cli/commands.h"
#include "errors.h"
#include "run/length_curve.h"

namespace hd::cli {

void add_length_curve(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string a, b, format = "human";
    ArmFlags shared, own_a, own_b;
    run::LengthCurveConfig cfg;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "length-curve", "final-layer error and KL between two arms at several prompt lengths");
  cmd->add_option("--a", o->a, "arm A's GGUF (the reference)")->required();
  cmd->add_option("--b", o->b, "arm B's GGUF (default: A's, with B's settings)");
  cmd->add_option("--text-file,-f", o->cfg.text_file, "the text both arms read")->required();
  cmd->add_option("--lengths", o->cfg.lengths, "prompt lengths in tokens, increasing")
      ->required()
      ->delimiter(',');
  cmd->add_option("--format", o->format, "human | json")
      ->check(CLI::IsMember({"human", "json"}))
      ->capture_default_str();
  add_arm_flags(*cmd, o->shared, "");
  add_arm_flags(*cmd, o->own_a, "a-");
  add_arm_flags(*cmd, o->own_b, "b-");
  cmd->callback([o, &ctx] {
    run::LengthCurveConfig cfg = o->cfg;
    cfg.a = resolve_arm(o->a, o->shared, o->own_a);
    cfg.b = resolve_arm(o->b.empty() ? o->a : o->b, o->shared, o->own_b);
    const auto r = run::length_curve(cfg, progress_line);
    if (o->format == "json") {
      std::cout << r.dump(2) << "\n";
    } else {
      std::cout << fmt::format("{:>8} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "length",
                               "rel err", "max |Δ|", "mean KL", "max KL", "flips");
      for (const auto& row : r["rows"]) {
        std::cout << fmt::format("{:>8} {:>12.4g} {:>12.4g} {:>12.4g} {:>12.4g} {:>8}\n",
                                 row["length"].get<int>(), row["rel_err"].get<double>(),
                                 row["max_abs"].get<double>(), row["mean_kl"].get<double>(),
                                 row["max_kl"].get<double>(), row["top1_flips"].get<int>());
      }
      std::cout << "\nrel err = ||Δ|| / ||A|| of the last layer's residual over all positions; "
                   "KL(A || B) per position\n";
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
