// heterodyne diff --a A.gguf --b B.gguf | --b-quant TYPE --text-file T | --tokens IDS
//                 [--chunk N] ... -o run.hdy
// heterodyne diff --resume run.hdy [-f TEXT|- | --tokens IDS|-]
#include <fmt/format.h>

#include "errors.h"
#include "kinds/command_line/analysis_flags.h"
#include "kinds/command_line/pair_flags.h"
#include "kinds/diff/diff_kind.h"
#include "kinds/diff/diff_run.h"

namespace hd::kinds {

using namespace cli;

void DiffKind::add_command(CLI::App& app, cli::Context& ctx) const {
  struct Opts {
    PairFlags pair;
    std::string out, resume, shard;
    run::DiffConfig cfg;
    AnalysisFlags analyses;
    bool force = false, no_prefix_reuse = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand(std::string(name()), std::string(description()));
  add_pair_flags(*cmd, o->pair, o->cfg);
  in_group(*cmd, "Analyses", [&] {
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
    add_analysis_flags(*cmd, o->analyses);
  });
  add_output_and_resume(*cmd, o->out, o->force, o->resume);
  in_group(*cmd, "Memory", [&] {
    cmd->add_flag("--two-contexts", o->cfg.two_contexts,
                  "keep both arms' llama.cpp contexts between passes, as a run with analyses "
                  "does: less time making them, more memory (the numbers are the same)");
  });
  add_shard_flag(*cmd, o->shard);
  cmd->callback([o, cmd, &ctx] {
    if (ctx.plan_only) return check_plan(std::string(kDiffKind), o->pair, o->cfg, o->resume);
    ResumableRun r =
        ResumableRun::of_arms(o->resume, o->out, o->pair.a, o->pair.input.given(std::string(kDiffKind)));
    r.resume_run = [&] {
      return run::diff_resume(o->resume, ctx.command_line, progress_line,
                              o->pair.input.given(std::string(kDiffKind)));
    };
    r.new_run = [&] {
      run::DiffConfig cfg = pair_config(std::string(kDiffKind), o->pair, o->cfg);
      cfg.transplants = cfg.transplants || cfg.components;
      cfg.prefix_reuse = !o->no_prefix_reuse;
      cfg.analyses = o->analyses.analyses();
      return run::diff_run(cfg, o->out, o->force, ctx.command_line, progress_line,
                           shard_of(o->shard));
    };
    ctx.exit_code = run_or_resume(*cmd, r);
  });
}

}  // namespace hd::kinds
