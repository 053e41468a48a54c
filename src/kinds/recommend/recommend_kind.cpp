// heterodyne recommend --a MODEL.gguf -f CALIBRATION.txt --held-out-text T.txt
//                      [--base Q4_K_M] [--types Q3_K,Q4_K,Q5_K,Q6_K,Q8_0]
//                      --target-size 2.1GiB|800MB|Q4_K_M | --target-kl 0.01
//                      [--chunk 256] [--calibration-chunks 8] [--held-out-chunks 16]
//                      [--layers-per-group 1] [--rounds 2] [--no-reuse] [--dry-run] -o DIR [--force]
// heterodyne recommend --resume DIR/report.hdy
// The recommend kind: its registration (kinds/kind.h), command, summary and verify.
#include <iostream>
#include <string_view>

#include "engine/quantize.h"
#include "errors.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/recommend/recommend.h"
#include "kinds/recommend/recommend_view.h"
#include "kinds/summary_kind.h"
#include "kinds/views.h"

namespace hd::kinds {

using namespace cli;

namespace {

void verify_recommend(const std::string& path, const run::VerifyOptions& options,
                      const ProgressFn& progress) {
  if (!options.input.empty())
    throw InputError("a recommendation reads its texts from the files it names; verify takes no "
                     "input");
  run::recommend_verify(path, options.force, progress);
}

namespace {

// The flags that say what recipe is wanted: the base, the candidates, the target, the groups.
void add_recipe_flags(CLI::App& cmd_ref, run::RecommendConfig& cfg, std::string& types) {
  CLI::App* cmd = &cmd_ref;
  in_group(*cmd, "Recipe", [&] {
    cmd->add_option("--base", cfg.base, "the file type every group starts from")
        ->capture_default_str();
    cmd->add_option("--types", types,
                    "candidate tensor types, comma-separated (" + engine::tensor_type_names() + ")")
        ->capture_default_str();
    cmd->add_option("--target-size", cfg.target_size,
                    "the file size: bytes, a unit (2.1GiB, 800MB) or a stock type's (Q4_K_M)");
    cmd->add_option("--target-kl", cfg.target_kl,
                    "or the smallest file whose predicted mean KL (calibration) is at most this")
        ->check(finite_number(0, false));
    cmd->add_option("--layers-per-group", cfg.layers_per_group,
                    "layers of one tensor class that move together (fewer passes)")
        ->capture_default_str();
    cmd->add_option("--rounds", cfg.rounds,
                    "rounds of measurement: each after the first starts at the recipe the one "
                    "before chose (1: around the base only)")
        ->capture_default_str();
  });
}

void add_speed_flags(CLI::App& cmd, bool& no_reuse, bool& dry_run) {
  in_group(cmd, "Speed", [&] {
    cmd.add_flag("--no-reuse", no_reuse,
                 "quantize every variant whole and run every pass from the tokens (the same "
                 "figures, slower: a check of the reuse)");
    cmd.add_flag("--dry-run", dry_run,
                 "print the planned passes and an estimate of the time (A's passes on a few chunks "
                 "timed); make and measure no variant");
  });
}

}  // namespace

void add_recommend_command(const RunKind& kind, CLI::App& app, cli::Context& ctx) {
  struct Opts {
    run::RecommendConfig cfg;
    std::string model, types, held_out_text, held_out_tokens, out, resume;
    InputFlags input;
    bool force = false, no_reuse = false, dry_run = false;
  };
  auto o = std::make_shared<Opts>();
  o->types = "Q3_K,Q4_K,Q5_K,Q6_K,Q8_0";
  CLI::App* cmd = app.add_subcommand(std::string(kind.name()), std::string(kind.description()));
  in_group(*cmd, "Inputs", [&] {
    cmd->add_option("--a,--model,-m", o->model, "the F32, F16 or BF16 model");
    add_input_flags(*cmd, o->input, "the calibration text the sensitivities are measured on",
                    kChunkedTokensNote);
    cmd->add_option("--held-out-text", o->held_out_text,
                    "the text the recipe is proven on (never the calibration text)");
    cmd->add_option("--held-out-tokens", o->held_out_tokens, "the same as token ids");
    cmd->add_option("--chunk,-c", o->cfg.chunk, "tokens per chunk")->capture_default_str();
    cmd->add_option("--calibration-chunks", o->cfg.calibration_chunks,
                    "calibration chunks each variant is measured on")
        ->capture_default_str();
    cmd->add_option("--held-out-chunks", o->cfg.held_out_chunks, "held-out chunks of the proof")
        ->capture_default_str();
  });
  add_recipe_flags(*cmd, o->cfg, o->types);
  add_speed_flags(*cmd, o->no_reuse, o->dry_run);
  in_group(*cmd, "Output", [&] {
    cmd->add_option("-o,--output", o->out,
                    "the directory: tensor-types.txt, model.gguf, report.hdy, held-out/*.hdy");
    cmd->add_flag("--force", o->force, "replace this command's files there");
  });
  in_group(*cmd, "Resume", [&] {
    cmd->add_option("--resume", o->resume, "finish an interrupted recommendation: its report.hdy");
  });
  cmd->callback([o, cmd, &ctx] {
    const bool held_text = !o->held_out_text.empty(), held_ids = !o->held_out_tokens.empty();
    if (held_text && held_ids)
      throw InputError("recommend takes --held-out-text or --held-out-tokens, not both");
    const run::InputPath input = o->input.given(std::string(kRecommendKind));
    ResumableRun r{o->resume,
                   o->out.empty() ? "" : o->out + "/report.hdy",
                   {{!o->model.empty(), "--a MODEL.gguf"},
                    {!input.empty(), ResumableRun::kInputNeeded},
                    {held_text || held_ids, "--held-out-text FILE"},
                    {!o->out.empty(), "-o DIR"},
                    {!o->cfg.target_size.empty() || !std::isnan(o->cfg.target_kl),
                     "--target-size SIZE or --target-kl KL"}},
                   {},
                   {}};
    std::string report = o->resume;
    const auto new_config = [&] {
      run::RecommendConfig cfg = o->cfg;
      cfg.model = stored_path(o->model);
      cfg.calibration = {stored_path(input.path), input.token_ids};
      cfg.held_out = {stored_path(held_text ? o->held_out_text : o->held_out_tokens), held_ids};
      cfg.types = split_list(o->types);
      cfg.reuse = !o->no_reuse;
      return cfg;
    };
    if (o->dry_run) {
      if (!o->resume.empty())
        throw InputError("--dry-run plans a new recommendation: not with --resume");
      if (o->model.empty() || input.empty() || !(held_text || held_ids))
        throw InputError("--dry-run needs --a MODEL.gguf, the calibration text and "
                         "--held-out-text (or --held-out-tokens)");
      run::recommend_dry_run(new_config(), std::cout, progress_line);
      ctx.exit_code = 0;
      return;
    }
    r.resume_run = [&] { return run::recommend_resume(o->resume, ctx.command_line, progress_line); };
    r.new_run = [&] {
      report = o->out + "/report.hdy";
      return run::recommend_run(new_config(), o->out, o->force, ctx.command_line, progress_line);
    };
    ctx.exit_code = run_or_resume(*cmd, r);
    if (ctx.exit_code == 0) std::cout << kinds::show_experiment(report, {}).text;
  });
}

}  // namespace

std::unique_ptr<const RunKind> make_recommend_kind() {
  return summary_kind({kRecommendKind,
                       "per-tensor quantization types chosen by measured KL, and proven on "
                       "held-out text",
                       add_recommend_command, verify_recommend,
                       report::print_recommend, report::add_recommend_rows, nullptr});
}

}  // namespace hd::kinds
