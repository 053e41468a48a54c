#include "kinds/command_line/pair_flags.h"
#include "kinds/command_line/help_format.h"

#include <algorithm>
#include <string>

#include "kinds/command_line/command_line.h"
#include "errors.h"

namespace hd::cli {

void add_pair_flags(CLI::App& cmd, PairFlags& f, run::DiffConfig& cfg) {
  in_group(cmd, "Inputs", [&] {
    cmd.add_option("--a", f.a, "arm A's GGUF (the reference)");
    cmd.add_option(
        "--b", f.b,
        f.b_defaults_to_a ? "arm B's GGUF (default: A's, with B's settings)" : "arm B's GGUF");
    cmd.add_option("--b-quant", f.b_quant,
                   "make arm B's model by quantizing A to this type (cached)");
    add_input_flags(cmd, f.input,
                    "the text the arms read ('-': standard input); with --resume, the input "
                    "again (checked against the stored sha256)",
                    kChunkedTokensNote);
    add_chunk_flags(cmd, cfg.chunk, cfg.max_chunks, cfg.score_from);
    add_skip_unencodable(cmd, cfg.skip_unencodable);
  });
  add_two_arm_flags(cmd, f.shared, f.own_a, f.own_b);
  in_group(cmd, "Analyses", [&] {
    cmd.add_flag("--no-floor", f.no_floor,
                 "skip the numerical floor (arms A and B re-split into other ubatches)");
    cmd.add_option("--floor-ub", cfg.floor_ubatch,
                   "one ubatch for the floor arms (default: two odd splits of the chunk, "
                   "chunks alternating)");
    cmd.add_option("--floor-chunks", cfg.floor_chunks,
                   "the chunks the floor is measured on: auto (1 in 8, at least 4; every chunk "
                   "of 8 or fewer), all, or N spread over the text")
        ->default_str("auto");
  });
}

run::DiffConfig pair_config(const std::string& command, const PairFlags& f, run::DiffConfig cfg) {
  if (!f.b.empty() && !f.b_quant.empty())
    throw InputError(command + " takes one of --b MODEL.gguf or --b-quant TYPE, not both");
  if (f.b.empty() && f.b_quant.empty() && !f.b_defaults_to_a)
    throw InputError(command + " needs exactly one of --b MODEL.gguf or --b-quant TYPE");
  cfg.a = resolve_arm(stored_path(f.a), f.shared, f.own_a);
  cfg.b = resolve_arm(stored_path(f.b.empty() ? f.a : f.b), f.shared, f.own_b);
  cfg.b_quant = f.b_quant;
  const run::InputPath input = f.input.given(command);
  cfg.text_file = stored_path(input.path);
  cfg.token_ids = input.token_ids;
  cfg.floor = !f.no_floor;
  // A floor split as its own arm is measures nothing: bitwise 0 whatever the kernels do.
  for (const auto* arm : {&cfg.a, &cfg.b}) {
    if (cfg.floor && cfg.floor_ubatch > 0 &&
        std::min(cfg.floor_ubatch, cfg.chunk) == std::min(arm->n_ubatch, cfg.chunk)) {
      throw InputError("--floor-ub " + std::to_string(cfg.floor_ubatch) + " splits a " +
                       std::to_string(cfg.chunk) + "-token chunk as arm " +
                       (arm == &cfg.a ? "A" : "B") + " itself does (-ub " +
                       std::to_string(arm->n_ubatch) + "): its floor would measure nothing; " +
                       "choose another, or leave it to the default odd split");
    }
  }
  return cfg;
}

void add_shard_flag(CLI::App& cmd, std::string& spec) {
  mark_rare_group("Cluster");
  in_group(cmd, "Cluster", [&] {
    cmd.add_option("--shard", spec,
                   "K/N: only the chunks c with c mod N = K, a part for heterodyne merge "
                   "(docs/cluster.md)");
  });
}

std::optional<run::Shard> shard_of(const std::string& spec) {
  if (spec.empty()) return std::nullopt;
  return run::parse_shard(spec);
}

void check_plan(const std::string& command, const PairFlags& f, const run::DiffConfig& cfg,
                const std::string& resume) {
  if (!resume.empty()) throw InputError(command + " --resume: heterodyne slurm runs new ones");
  const run::InputPath input = f.input.required(command);
  if (input.path == "-") {
    throw InputError(std::string("a Slurm job has no standard input: give ") +
                     (input.token_ids ? "--tokens FILE" : "-f FILE"));
  }
  if (f.a.empty()) throw InputError(command + " needs --a MODEL.gguf");
  run::validate(pair_config(command, f, cfg));
}

}  // namespace hd::cli
