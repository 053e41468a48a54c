// heterodyne sweep --a A.gguf [--b B.gguf | --b-quant TYPE] [settings, --a-… --b-…]
//                  --text-file T [--chunk N]
//                  [--max-chunks N] [--score-from N|half] [--no-floor] [--floor-ub N]
//                  [--max-arms 64] -o sweep.hdy [--force]
// heterodyne sweep --resume sweep.hdy [-f TEXT|-]
#include "cli/arm_flags.h"
#include "cli/commands.h"
#include "errors.h"
#include "run/sweep.h"

namespace hd::cli {

void add_sweep(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string a, b, b_quant, text, out, resume;
    ArmFlags shared, own_a, own_b;
    run::DiffConfig cfg;
    int max_arms = 64;
    bool no_floor = false, force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "every combination of the settings two arms differ in: how much each causes");
  in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--a", o->a, "arm A's GGUF (the reference)");
    cmd->add_option("--b", o->b, "arm B's GGUF (default: A's, with B's settings)");
    cmd->add_option("--b-quant", o->b_quant,
                    "make arm B's model by quantizing A to this type (cached)");
    cmd->add_option("--text-file,-f", o->text,
                    "the text every arm reads ('-': standard input); with --resume, the text "
                    "again (checked against the stored sha256)");
    add_chunk_flags(*cmd, o->cfg.chunk, o->cfg.max_chunks, o->cfg.score_from);
    add_skip_unencodable(*cmd, o->cfg.skip_unencodable);
  });
  add_two_arm_flags(*cmd, o->shared, o->own_a, o->own_b);
  in_group(*cmd, "Analyses", [&] {
    cmd->add_flag("--no-floor", o->no_floor, "skip the numerical floor");
    cmd->add_option("--floor-ub", o->cfg.floor_ubatch, "ubatch of the floor arm");
    cmd->add_option("--max-arms", o->max_arms, "refuse more combinations than this")
        ->capture_default_str();
  });
  add_output_and_resume(*cmd, o->out, o->force, o->resume);
  cmd->callback([o, cmd, &ctx] {
    ResumableRun r = ResumableRun::of_arms(o->resume, o->out, o->a, o->text);
    r.resume_run = [&] {
      return run::sweep_resume(o->resume, ctx.command_line, progress_line, o->text);
    };
    r.new_run = [&] {
      if (!o->b.empty() && !o->b_quant.empty())
        throw InputError("sweep takes one of --b MODEL.gguf or --b-quant TYPE, not both");
      run::DiffConfig cfg = o->cfg;
      cfg.a = resolve_arm(stored_path(o->a), o->shared, o->own_a);
      cfg.b = resolve_arm(stored_path(o->b.empty() ? o->a : o->b), o->shared, o->own_b);
      cfg.b_quant = o->b_quant;
      cfg.text_file = stored_path(o->text);
      cfg.floor = !o->no_floor;
      return run::sweep_run(cfg, o->max_arms, o->out, o->force, ctx.command_line, progress_line);
    };
    ctx.exit_code = run_or_resume(*cmd, r);
  });
}

}  // namespace hd::cli
