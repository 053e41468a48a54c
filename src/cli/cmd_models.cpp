// heterodyne make-model --preset P --seed S --type T -o m.gguf
// heterodyne quantize in.gguf out.gguf TYPE
#include "cli/commands.h"
#include "engine/model_maker.h"
#include "engine/quantize.h"
#include "engine/system.h"
#include "errors.h"

namespace hd::cli {

void add_make_model(CLI::App& app, Context& ctx) {
  auto spec = std::make_shared<engine::ModelSpec>();
  auto out = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("make-model", "write a deterministic random-weight GGUF with real shapes");
  cmd->add_option("--preset", spec->preset, "tiny-llama | tiny-qwen3 | qwen3-0.6b")->required();
  cmd->add_option("--seed", spec->seed, "random seed")->capture_default_str();
  cmd->add_option("--type", spec->type, "f32 | f16 | bf16")->capture_default_str();
  cmd->add_option("-o,--output", *out, "GGUF to write")->required();
  cmd->add_flag("--force", *force, "replace an existing file");
  cmd->callback([spec, out, force, &ctx] {
    engine::make_model(*spec, *out, OutputPolicy(*force));
    progress_line("wrote " + *out);
    ctx.exit_code = 0;
  });
}

void add_quantize(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string in, out, type;
    int threads = 0;
    bool threads_given = false;
    bool keep_output = false, force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("quantize", "llama_model_quantize, in-process");
  cmd->add_option("input", o->in, "source GGUF (F32/F16/BF16)")->required();
  cmd->add_option("output", o->out, "GGUF to write")->required();
  cmd->add_option("type", o->type, "Q8_0, Q4_K_M, Q4_0, ...")->required();
  cmd->add_flag("--leave-output-tensor", o->keep_output,
                "leave output.weight unquantized (as llama-quantize)");
  cmd->add_flag("--force", o->force, "replace an existing output file");
  cmd->add_option("-t,--threads", o->threads, "threads (default: all cores)")
      ->each([o](const std::string&) { o->threads_given = true; });
  cmd->callback([o, &ctx] {
    if (o->threads < 0 || (o->threads == 0 && o->threads_given))
      throw InputError("thread count must be at least 1, not " + std::to_string(o->threads));
    engine::quantize_model(o->in, o->out, o->type,
                           o->threads > 0 ? o->threads : engine::default_threads(), o->keep_output,
                           OutputPolicy(o->force));
    progress_line("wrote " + o->out);
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
