// heterodyne diff --a A.gguf --b B.gguf | --b-quant TYPE --text-file T [--chunk N] ... -o run.hdy
// heterodyne diff --resume run.hdy [-f TEXT|-]
#include <fmt/format.h>

#include "cli/analysis_flags.h"
#include "cli/arm_flags.h"
#include "cli/commands.h"
#include "errors.h"
#include "run/diff.h"

namespace hd::cli {

void add_diff(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string a, b, b_quant, text, out, resume;
    ArmFlags shared, own_a, own_b;
    run::DiffConfig cfg;
    bool no_floor = false, force = false, no_prefix_reuse = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("diff", "run two arms on identical tokens and store every number");
  in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--a", o->a, "arm A's GGUF (the reference)");
    cmd->add_option("--b", o->b, "arm B's GGUF");
    cmd->add_option("--b-quant", o->b_quant, "make arm B by quantizing A to this type (cached)");
    cmd->add_option("--text-file,-f", o->text,
                    "the text both arms read ('-': standard input); with --resume, the text "
                    "again (checked against the stored sha256)");
    add_chunk_flags(*cmd, o->cfg.chunk, o->cfg.max_chunks, o->cfg.score_from);
    add_skip_unencodable(*cmd, o->cfg.skip_unencodable);
  });
  add_two_arm_flags(*cmd, o->shared, o->own_a, o->own_b);
  in_group(*cmd, "Analyses", [&] {
    cmd->add_flag("--no-floor", o->no_floor,
                  "skip the numerical floor (arm A re-split into other ubatches)");
    cmd->add_option("--floor-ub", o->cfg.floor_ubatch,
                    "ubatch of the floor arm (default: an odd split of the chunk)");
    cmd->add_flag("--save-residuals", o->cfg.save_residuals,
                  "store every l_out-N tensor of both arms");
    cmd->add_flag(
        "--transplants", o->cfg.transplants,
        "denoise (A's residual into B) and noise (B's into A) at inp_embd and every l_out-N");
    cmd->add_flag("--components", o->cfg.components,
                  "transplants at every ffn_inp-N too: the attention/MLP split of each layer");
    cmd->add_flag(
        "--no-prefix-reuse", o->no_prefix_reuse,
        "run every patched pass from the embeddings (for comparison; the numbers are the same)");
    add_analysis_flag(*cmd, o->cfg.analyses);
  });
  add_output_and_resume(*cmd, o->out, o->force, o->resume);
  cmd->callback([o, cmd, &ctx] {
    ResumableRun r = ResumableRun::of_arms(o->resume, o->out, o->a, o->text);
    r.resume_run = [&] {
      return run::diff_resume(o->resume, ctx.command_line, progress_line, o->text);
    };
    r.new_run = [&] {
      if (o->b.empty() == o->b_quant.empty())
        throw InputError("diff needs exactly one of --b MODEL.gguf or --b-quant TYPE");
      run::DiffConfig cfg = o->cfg;
      cfg.a = resolve_arm(stored_path(o->a), o->shared, o->own_a);
      cfg.b = resolve_arm(stored_path(o->b), o->shared, o->own_b);
      cfg.b_quant = o->b_quant;
      cfg.text_file = stored_path(o->text);
      cfg.floor = !o->no_floor;
      cfg.transplants = cfg.transplants || cfg.components;
      cfg.prefix_reuse = !o->no_prefix_reuse;
      return run::diff_run(cfg, o->out, o->force, ctx.command_line, progress_line);
    };
    ctx.exit_code = run_or_resume(*cmd, r);
  });
}

}  // namespace hd::cli
