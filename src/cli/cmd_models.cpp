// heterodyne make-model --preset P --seed S --type T -o m.gguf
// heterodyne make-model --arch A [--moe] [--seed S] -o m.gguf | --list-archs
// heterodyne quantize in.gguf out.gguf TYPE
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iostream>

#include "cli/commands.h"
#include "engine/fixtures.h"
#include "engine/model_maker.h"
#include "engine/model_presets.h"
#include "engine/quantize.h"
#include "engine/threads.h"
#include "errors.h"

namespace hd::cli {

namespace {

// --list-archs: one line per architecture and the variants it has, then a count on stderr.
void list_fixture_archs() {
  const std::vector<engine::FixtureArch> archs = engine::fixture_archs();
  size_t files = 0;
  for (const engine::FixtureArch& a : archs) {
    const std::string variants = a.dense && a.moe ? "dense, moe" : a.dense ? "dense" : "moe";
    std::cout << fmt::format("{:<18} {}\n", a.name, variants);
    files += (a.dense ? 1 : 0) + (a.moe ? 1 : 0);
  }
  progress_line(fmt::format("{} architectures, {} fixtures (llama.cpp's test-llama-archs)",
                            archs.size(), files));
}

std::string gigabytes(uint64_t bytes) {
  return bytes >= 1000000000 ? fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9)
                             : fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
}

// --list-presets: every preset with its shape and the size of its file at each weight type.
void list_presets() {
  std::vector<std::array<std::string, 3>> rows;
  size_t shape_width = 0;
  for (const std::string& name : engine::model_presets()) {
    const engine::Preset& p = engine::find_preset(name);
    std::string sizes;
    if (p.vocab_file == nullptr) {
      sizes = "  (its vocabulary is the demo's: make demo)";
    } else {
      for (const std::string& type : engine::model_weight_types()) {
        engine::ModelSpec spec;
        spec.preset = name;
        spec.type = type;
        sizes += fmt::format("  {} {:>9}", type, gigabytes(engine::model_file_bytes(spec)));
      }
    }
    std::string shape = fmt::format("{}, {} layers, n_embd {}{}", p.arch, p.n_layer, p.n_embd,
                                     p.n_expert > 0 ? fmt::format(", {} experts", p.n_expert) : "");
    shape_width = std::max(shape_width, shape.size());
    rows.push_back({name, std::move(shape), std::move(sizes)});
  }
  for (const auto& [name, shape, sizes] : rows) {
    std::cout << fmt::format("{:<14} {:<{}}{}\n", name, shape, shape_width, sizes);
  }
}

}  // namespace

void add_make_model(CLI::App& app, Context& ctx) {
  struct Opts {
    engine::ModelSpec spec;
    std::string arch, out;
    bool moe = false, list_archs = false, list_presets = false, force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "make-model", "write a deterministic random-weight GGUF: a preset, or any architecture");
  CLI::Option* preset =
      cmd->add_option("--preset", o->spec.preset,
                      engine::joined_names(engine::model_presets()) +
                          " (--list-presets: each with its size on disk)");
  CLI::Option* arch = cmd->add_option(
      "--arch", o->arch, "llama.cpp's fixture of this architecture (make fixtures builds it)");
  CLI::Option* list = cmd->add_flag("--list-archs", o->list_archs,
                                    "list the architectures --arch makes, dense and MoE");
  CLI::Option* list_sizes = cmd->add_flag(
      "--list-presets", o->list_presets, "list the presets, each with its shape and file sizes");
  cmd->add_flag("--moe", o->moe, "the MoE variant of --arch")->needs(arch);
  cmd->add_option("--seed", o->spec.seed, "random seed")->capture_default_str();
  cmd->add_option("--type", o->spec.type, "f32 | f16 | bf16 (presets)")
      ->capture_default_str()
      ->excludes(arch);
  CLI::Option* perturb = cmd->add_option(
      "--perturb", o->spec.perturb,
      "add noise to the tensors whose names contain this (ffn_gate_inp: the routers)");
  perturb->excludes(arch);
  cmd->add_option("--perturb-scale", o->spec.perturb_scale,
                  "the noise's spread relative to the weights'")
      ->capture_default_str()
      ->needs(perturb);
  CLI::Option* out = cmd->add_option("-o,--output", o->out, "GGUF to write");
  cmd->add_flag("--force", o->force, "replace an existing file");
  preset->excludes(arch)->excludes(list)->excludes(list_sizes);
  arch->excludes(list)->excludes(list_sizes);
  out->excludes(list)->excludes(list_sizes);
  list->excludes(list_sizes);
  cmd->callback([o, &ctx] {
    if (o->list_archs) {
      list_fixture_archs();
    } else if (o->list_presets) {
      list_presets();
    } else if (o->spec.preset.empty() && o->arch.empty()) {
      throw InputError("make-model needs --preset NAME or --arch NAME (or --list-archs)");
    } else if (o->out.empty()) {
      throw InputError("make-model needs -o FILE.gguf");
    } else if (!o->arch.empty()) {
      engine::make_fixture(o->arch, o->moe, o->spec.seed, o->out, OutputPolicy(o->force));
      progress_line("wrote " + o->out);
    } else {
      engine::make_model(o->spec, o->out, OutputPolicy(o->force));
      progress_line("wrote " + o->out);
    }
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
