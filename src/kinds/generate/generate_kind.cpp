// The generate kind's registration: its command (two arms' flags, the prompts, the generation),
// its summary and prompts as show prints them, and its verify. With generate.h/.cpp (the run),
// generate_decode (one completion), generate_transplant (which layer), generate_rows (its
// tables), generate_summary and generate_print (what is read), generate_prompts (its input) and
// web/src/kind_generate.ts (its page), this is everything the kind is.
//
// heterodyne generate --a A.gguf [--b B.gguf] [settings, --a-… --b-…] --prompts FILE
//                     [--chat] [--max-tokens N] [--trials K] [--temp T --seed S] -o gen.hdy
#include <map>

#include "errors.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/command_line/pair_flags.h"
#include "kinds/generate/generate.h"
#include "kinds/generate/generate_export.h"
#include "kinds/generate/generate_summary.h"
#include "kinds/summary_kind.h"

namespace hd::kinds {

namespace {

// A part holds its prompts' rows and hashes (generate_sha256/P) and a summary of its own prompts;
// its prompts are those whose rows it holds, read and checked (a damaged part is named), and the
// merged file computes the run's summary from every prompt.
const run::Sharding kGenerateSharding{
    "generate_sha256/", {std::string(kGenerateKind)},
    [](const store::Experiment& part, const std::map<std::string, std::string>&) {
      return stored_generate_prompts(part);
    },
    [](store::Experiment& merged, int n_prompts) { return finish_merged_generate(merged, n_prompts); }};

void add_generate_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  struct Opts {
    GenerateConfig cfg;
    std::string a, b, prompts, out, resume, shard;
    cli::ArmFlags shared, own_a, own_b;
    bool force = false, no_transplants = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
  cli::in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--a", o->a, "arm A's GGUF (the reference)");
    cmd->add_option("--b", o->b, "arm B's GGUF (default: A's, with B's settings)");
    cmd->add_option("--b-quant", o->cfg.b_quant, "make arm B's model by quantizing A to this type (cached)");
    cmd->add_option("--prompts", o->prompts,
                    "one prompt a line, or a .jsonl file of objects with a \"prompt\" string");
    cmd->add_flag("--chat", o->cfg.chat,
                  "wrap each prompt in the model's own chat template (stored as rendered)");
    cmd->add_option("--max-prompts", o->cfg.max_prompts, "at most this many prompts (0: all)")
        ->capture_default_str();
  });
  cli::in_group(*cmd, "Generation", [&] {
    cmd->add_option("--max-tokens,-n", o->cfg.max_tokens, "tokens generated per prompt at most")
        ->capture_default_str();
    cmd->add_option("--trials", o->cfg.trials,
                    "B's server compositions (a server arm): trial t takes neighbour seed S + t and "
                    "slot (K + t) mod slots; counts the distinct completions")
        ->capture_default_str();
    cmd->add_option("--temp", o->cfg.temperature,
                    "sample with llama.cpp's sampler chain at this temperature (0: greedy)")
        ->check(cli::finite_number(0, true))
        ->capture_default_str();
    cmd->add_option("--seed", o->cfg.seed, "the sampler's seed, the same on both arms")
        ->capture_default_str();
    cmd->add_flag("--no-transplants", o->no_transplants,
                  "skip the transplants that find which layer makes a completion part");
  });
  cli::add_two_arm_flags(*cmd, o->shared, o->own_a, o->own_b);
  cli::add_output_and_resume(*cmd, o->out, o->force, o->resume);
  cli::add_shard_flag(*cmd, o->shard);
  cmd->callback([o, cmd, &ctx] {
    const run::InputPath input{o->prompts.empty() ? "" : cli::stored_path(o->prompts), false};
    const auto config = [&] {
      if (!o->b.empty() && !o->cfg.b_quant.empty())
        throw InputError("generate takes one of --b MODEL.gguf or --b-quant TYPE, not both");
      GenerateConfig cfg = o->cfg;
      cfg.transplants = !o->no_transplants;
      cfg.prompts_file = input.path;
      cfg.a = cli::resolve_arm(cli::stored_path(o->a), o->shared, o->own_a);
      cfg.b = cli::resolve_arm(cli::stored_path(o->b.empty() ? o->a : o->b), o->shared, o->own_b);
      check_generate_config(cfg);
      return cfg;
    };
    if (ctx.plan_only) {  // heterodyne slurm: the flags of a new run, checked; nothing runs
      if (o->a.empty() || o->prompts.empty()) throw InputError("generate needs --a MODEL.gguf and --prompts FILE");
      (void)config();
      (void)cli::shard_of(o->shard);
      return;
    }
    cli::ResumableRun r{o->resume, o->out,
                        {{!o->a.empty(), "--a MODEL.gguf"}, {!o->prompts.empty(), "--prompts FILE"},
                         {!o->out.empty(), "-o FILE.hdy"}},
                        {}, {}};
    r.resume_run = [&] {
      return generate_resume(o->resume, ctx.command_line, cli::progress_line, input);
    };
    r.new_run = [&] {
      return generate_run(config(), o->out, o->force, ctx.command_line, cli::progress_line,
                          cli::shard_of(o->shard));
    };
    ctx.exit_code = cli::run_or_resume(*cmd, r);
  });
}

}  // namespace

std::unique_ptr<const RunKind> make_generate_kind() {
  return summary_kind({kGenerateKind,
                       "where two arms' generated text parts, and which layer makes it part "
                       "(docs/generate.md)",
                       add_generate_command, generate_verify, print_generate,
                       add_generate_prompts, &kGenerateSharding, false, generate_export_tables(),
                       generate_export_rows});
}

}  // namespace hd::kinds
