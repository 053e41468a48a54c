// heterodyne floor --model m.gguf --text-file t.txt | --tokens IDS --ub 1..512
//                  [--threads 1,2] [--fa on,off]
//                  [--ref-ub 512] [-ctk T] [-ctv T] [-dev D -ngl N --rpc S --llama-build B]
//                  [--chunk 128] [--max-chunks 4] -o floor.hdy [--force]
// heterodyne floor --resume floor.hdy [-f TEXT|- | --tokens IDS|-]
// The floor kind: its registration (kinds/kind.h), command, summary and verify.
#include <string_view>

#include "errors.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/floor/floor.h"
#include "kinds/floor/floor_rows.h"
#include "kinds/floor/floor_view.h"
#include "kinds/summary_kind.h"
#include "store/experiment.h"

namespace hd::kinds {

using namespace cli;

namespace {

namespace {
// A floor keeps its rows in tables (floor_rows.h), added to its summary.
void add_floor_rows(const store::Experiment& e, nlohmann::json& floor) {
  if (!store::has_floor_tables(e))
    throw InputError("'" + e.path() + "' is damaged: its floor tables are missing");
  floor.update(store::floor_groups_json(store::read_floor_groups(e)));
}
}  // namespace

void add_floor_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  struct Opts {
    run::FloorConfig cfg;
    std::string model, ub = "1..64", threads, fa = "auto", out, resume;
    ArmFlags flags;
    InputFlags input;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
  in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--model,-m", o->model, "the GGUF");
    add_input_flags(*cmd, o->input,
                    "the text ('-': standard input); with --resume, the input again (checked "
                    "against the stored sha256)",
                    kChunkedTokensNote);
    cmd->add_option("--chunk,-c", o->cfg.chunk, "tokens per chunk")->capture_default_str();
    cmd->add_option("--max-chunks", o->cfg.max_chunks, "at most this many chunks (0: all)")
        ->capture_default_str();
    add_skip_unencodable(*cmd, o->cfg.skip_unencodable);
  });
  in_group(*cmd, "Settings explored (each a list)", [&] {
    cmd->add_option("--ub,--ubatch-size", o->ub, "ubatch sizes: 1..512, 1,2,7 or a mix")
        ->capture_default_str();
    cmd->add_option("-t,--threads", o->threads, "thread counts, e.g. 1,2 (default: all cores)");
    cmd->add_option("--fa,--flash-attn", o->fa, "flash attention values: on, off, auto, or a list")
        ->capture_default_str();
  });
  in_group(*cmd, "Fixed settings", [&] {
    cmd->add_option("--ref-ub", o->cfg.reference_ubatch, "the reference run's ubatch")
        ->capture_default_str();
    // -ctk, -ctv and where the arm runs, as diff spells them (the swept ones are lists above).
    add_single_arm_flags(*cmd, o->flags, run::floor_swept_settings());
  });
  add_output_and_resume(*cmd, o->out, o->force, o->resume);
  cmd->callback([o, cmd, &ctx] {
    const run::InputPath input = o->input.given(std::string(kFloorKind));
    ResumableRun r{o->resume,
                   o->out,
                   {{!o->model.empty(), "--model MODEL.gguf"},
                    {!input.empty(), ResumableRun::kInputNeeded},
                    {!o->out.empty(), "-o FILE.hdy"}},
                   {},
                   {}};
    r.resume_run = [&] {
      return run::floor_resume(o->resume, ctx.command_line, progress_line, input);
    };
    r.new_run = [&] {
      run::FloorConfig cfg = o->cfg;
      cfg.arm = resolve_arm(stored_path(o->model), o->flags, ArmFlags{});
      cfg.text_file = stored_path(input.path);
      cfg.token_ids = input.token_ids;
      cfg.ubatches = run::parse_int_list(o->ub);
      if (!o->threads.empty()) cfg.threads = run::parse_int_list(o->threads);
      cfg.flash_attn = split_list(o->fa);
      if (cfg.reference_ubatch < 1) throw InputError("--ref-ub must be at least 1");
      return run::floor_run(cfg, o->out, o->force, ctx.command_line, progress_line);
    };
    ctx.exit_code = run_or_resume(*cmd, r);
  });
}

}  // namespace

std::unique_ptr<const RunKind> make_floor_kind() {
  return summary_kind({kFloorKind,
                       "which ubatch splits (threads, flash attention) reproduce a run bit for bit",
                       add_floor_command, run::floor_verify,
                       report::print_floor, add_floor_rows, nullptr});
}

}  // namespace hd::kinds
