// heterodyne sweep --a A.gguf [--b B.gguf | --b-quant TYPE] [settings, --a-… --b-…]
//                  --text-file T | --tokens IDS [--chunk N]
//                  [--max-chunks N] [--score-from N|half] [--no-floor] [--floor-ub N]
//                  [--max-arms 64] -o sweep.hdy [--force]
// heterodyne sweep --resume sweep.hdy [-f TEXT|- | --tokens IDS|-]
// The sweep kind: its registration (kinds/kind.h), command, summary and verify.
#include <string_view>

#include "errors.h"
#include "kinds/command_line/pair_flags.h"
#include "kinds/summary_kind.h"
#include "kinds/sweep/sweep.h"
#include "kinds/sweep/sweep_view.h"
#include "store/experiment.h"

namespace hd::kinds {

using namespace cli;

namespace {

// A sweep's parts hash each chunk's rows under sweep_rows_sha256/N and keep a summary of their
// own chunks (meta "sweep"); the merged file computes the run's from every chunk.
const run::Sharding kSweepSharding{
    "sweep_rows_sha256/", {std::string(kSweepKind)}, nullptr,
    [](store::Experiment& merged, int n_chunks) -> std::optional<std::string> {
      for (int c = 0; c < n_chunks; ++c) {
        if (auto altered = merged.sweep_chunk_altered(c)) return altered;
      }
      run::store_sweep_summary(merged);  // of every chunk, as one process computes it
      return std::nullopt;
    }};

void add_sweep_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  struct Opts {
    PairFlags pair;
    std::string out, resume, shard;
    run::DiffConfig cfg;
    int max_arms = 64;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
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
      run::DiffConfig cfg = pair_config(std::string(kSweepKind), o->pair, o->cfg);
      // A sweep attributes the floor of every combination chunk by chunk: it has no sample.
      if (cmd->count("--floor-chunks") > 0 && cfg.floor_chunks != "all") {
        throw InputError("sweep measures its floor on every chunk: --floor-chunks is diff's");
      }
      cfg.floor_chunks = "all";
      return run::sweep_run(cfg, o->max_arms, o->out, o->force, ctx.command_line, progress_line,
                            shard_of(o->shard));
    };
    ctx.exit_code = run_or_resume(*cmd, r);
  });
}

}  // namespace

std::unique_ptr<const RunKind> make_sweep_kind() {
  return summary_kind({kSweepKind,
                       "every combination of the settings two arms differ in: how much each causes",
                       add_sweep_command, run::sweep_verify,
                       report::print_sweep, nullptr, &kSweepSharding});
}

}  // namespace hd::kinds
