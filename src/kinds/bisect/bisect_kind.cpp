// The bisect kind's registration: its command (the model and its settings, the text, the two
// ends, --llama-src, the criterion; --dry-run prints the plan), the stored bisect as show prints
// it, and its verify.
//
// heterodyne bisect --model m.gguf [-ctk … -fa … -t …] -f text.txt
//     --good npm:node-llama-cpp@A --bad npm:node-llama-cpp@B [--llama-src DIR]
//     [--criterion kl|flips|exact] [--dry-run] -o bisect.hdy
#include <iostream>

#include "errors.h"
#include "kinds/bisect/bisect.h"
#include "kinds/bisect/bisect_print.h"
#include "kinds/bisect/bisect_probe.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/summary_kind.h"
#include "store/experiment.h"

namespace hd::kinds {

namespace {

using namespace cli;

void add_bisect_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  struct Opts {
    BisectConfig cfg;
    std::string model, out, resume;
    ArmFlags flags;
    InputFlags input;
    bool force = false, dry_run = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
  in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--model,-m", o->model, "the GGUF");
    add_input_flags(*cmd, o->input, "the text every probe's diff reads (a file)",
                    kChunkedTokensNote);
    cmd->add_option("--chunk,-c", o->cfg.chunk, "tokens per chunk")->capture_default_str();
    cmd->add_option("--max-chunks", o->cfg.max_chunks, "chunks each probe diffs (0: all)")
        ->capture_default_str();
  });
  in_group(*cmd, "Builds", [&] {
    cmd->add_option("--good", o->cfg.good,
                    "the build whose outputs are right: npm:node-llama-cpp@X.Y.Z, or with "
                    "--llama-src a revision (or release) of it");
    cmd->add_option("--bad", o->cfg.bad, "the newer build whose outputs changed (same forms)");
    cmd->add_option("--llama-src", o->cfg.llama_src,
                    "a git checkout of llama.cpp: bisect its commits from --good to --bad (it is "
                    "never modified: a clone in the cache is checked out)");
    cmd->add_option("--build-options", o->cfg.build_options,
                    "CMake OPTION=VALUE,… every candidate is built with")
        ->capture_default_str();
  });
  in_group(*cmd, "Search", [&] {
    cmd->add_option("--criterion", o->cfg.criterion,
                    "what 'differs' means: kl (mean KL clears both floors), flips (any top-1 "
                    "change), exact (any KL not 0)")
        ->check(CLI::IsMember(bisect::criteria()))
        ->capture_default_str();
    cmd->add_option("--decode", o->cfg.decode_steps,
                    "single-token decode steps compared at the first that differs")
        ->capture_default_str();
    cmd->add_flag("--dry-run", o->dry_run, "print the candidates and the first probes; build nothing");
  });
  in_group(*cmd, "Arm settings (both builds)", [&] {
    add_single_arm_flags(*cmd, o->flags, {"llama_build"});
  });
  add_output_and_resume(*cmd, o->out, o->force, o->resume);
  cmd->callback([o, cmd, &ctx] {
    const run::InputPath input = o->input.given(std::string(kBisectKind));
    const auto config = [&] {
      BisectConfig c = o->cfg;
      c.arm = resolve_arm(stored_path(o->model), o->flags, ArmFlags{});
      c.text_file = stored_path(input.path);
      c.token_ids = input.token_ids;
      if (!c.llama_src.empty()) c.llama_src = stored_path(c.llama_src);
      return c;
    };
    if (o->dry_run) {
      if (!o->resume.empty()) throw InputError("--dry-run plans a new bisect: not with --resume");
      if (o->model.empty()) throw InputError("bisect needs --model MODEL.gguf");
      bisect_plan(config(), std::cout, progress_line);
      ctx.exit_code = 0;
      return;
    }
    ResumableRun r{o->resume,
                   o->out,
                   {{!o->model.empty(), "--model MODEL.gguf"},
                    {!input.empty(), ResumableRun::kInputNeeded},
                    {!o->cfg.good.empty(), "--good BUILD"},
                    {!o->cfg.bad.empty(), "--bad BUILD"},
                    {!o->out.empty(), "-o FILE.hdy"}},
                   {},
                   {}};
    r.resume_run = [&] { return bisect_resume(o->resume, ctx.command_line, progress_line); };
    r.new_run = [&] { return bisect_run(config(), o->out, o->force, ctx.command_line, progress_line); };
    ctx.exit_code = run_or_resume(*cmd, r);
  });
}

// export's table `probes`: one row per probe in the order they ran, its figures flat (null where
// it was skipped), from the probes stored so far: an unfinished bisect exports too.
report::KindRows probe_rows(const std::string& path, const std::string& table) {
  (void)table;
  const store::Experiment e = store::Experiment::open(path, false);
  const auto probes = nlohmann::json::parse(e.meta("bisect_probes").value_or("[]"), nullptr, false);
  if (!probes.is_array()) throw InputError("'" + path + "' is damaged: its bisect_probes are not a list");
  report::KindRows t{{"probe", "candidate", "name", "outcome", "reason", "kl_mean", "kl_ci95",
                      "flips", "n_scored", "floor_kl_mean", "floor_kl_ci95", "floor_bitwise",
                      "build_seconds", "diff_seconds"},
                     {},
                     e.integrity_verdict()};
  for (size_t i = 0; i < probes.size(); ++i) {
    const nlohmann::json& p = probes[i];
    const nlohmann::json f = p.value("figures", nlohmann::json::object());
    const auto get = [](const nlohmann::json& j, const char* k) { return j.value(k, nlohmann::json(nullptr)); };
    t.rows.push_back({i, get(p, "candidate"), get(p, "name"), get(p, "outcome"), get(p, "reason"),
                      get(f, "kl_mean"), get(f, "kl_ci95"), get(f, "flips"), get(f, "n_scored"),
                      get(f, "floor_kl_mean"), get(f, "floor_kl_ci95"), get(f, "floor_bitwise"),
                      get(p, "build_seconds"), get(p, "diff_seconds")});
  }
  return t;
}

}  // namespace

std::unique_ptr<const RunKind> make_bisect_kind() {
  return summary_kind(
      {kBisectKind, "the first llama.cpp release (or commit) whose outputs on a model differ",
       add_bisect_command, bisect_verify,
       [](std::ostream& out, const report::LoadedResult& l) { bisect::print_bisect(out, l.result); },
       nullptr, nullptr, false, {"probes"}, probe_rows});
}

}  // namespace hd::kinds
