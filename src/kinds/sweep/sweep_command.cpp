// heterodyne sweep --a A.gguf [--b B.gguf | --b-quant TYPE] [settings, --a-… --b-…]
//                  --text-file T | --tokens IDS [--chunk N]
//                  [--max-chunks N] [--score-from N|half] [--no-floor] [--floor-ub N]
//                  [--max-arms 64] -o sweep.hdy [--force]
// heterodyne sweep --resume sweep.hdy [-f TEXT|- | --tokens IDS|-]
#include "kinds/command_line/pair_flags.h"
#include "errors.h"
#include "kinds/sweep/sweep_kind.h"
#include "kinds/sweep/sweep.h"

namespace hd::kinds {

using namespace cli;

void SweepKind::add_command(CLI::App& app, cli::Context& ctx) const {
  struct Opts {
    PairFlags pair;
    std::string out, resume, shard;
    run::DiffConfig cfg;
    int max_arms = 64;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(std::string(name()), std::string(description()));
  o->pair.b_defaults_to_a = true;
  add_pair_flags(*cmd, o->pair, o->cfg);
  in_group(*cmd, "Analyses", [&] {
    cmd->add_option("--max-arms", o->max_arms, "refuse more combinations than this")
        ->capture_default_str();
  });
  add_output_and_resume(*cmd, o->out, o->force, o->resume);
  add_shard_flag(*cmd, o->shard);
  cmd->callback([o, cmd, &ctx] {
    if (ctx.plan_only) return check_plan(std::string(kSweepKind), o->pair, o->cfg, o->resume);
    ResumableRun r =
        ResumableRun::of_arms(o->resume, o->out, o->pair.a, o->pair.input.given(std::string(kSweepKind)));
    r.resume_run = [&] {
      return run::sweep_resume(o->resume, ctx.command_line, progress_line,
                               o->pair.input.given(std::string(kSweepKind)));
    };
    r.new_run = [&] {
      const run::DiffConfig cfg = pair_config(std::string(kSweepKind), o->pair, o->cfg);
      return run::sweep_run(cfg, o->max_arms, o->out, o->force, ctx.command_line, progress_line,
                            shard_of(o->shard));
    };
    ctx.exit_code = run_or_resume(*cmd, r);
  });
}

}  // namespace hd::kinds
