// heterodyne: where and why two llama.cpp configurations of a model disagree.
// The one place where errors become a line on stderr and an exit code.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "build_info.h"
#include "cli/arm_flags.h"
#include "cli/commands.h"
#include "commit.h"
#include "errors.h"
#include "run/diff.h"

namespace {

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~") == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void on_signal(int) { hd::run::request_stop(); }

int fail(int code, const std::string& msg) {
  std::fprintf(stderr, "heterodyne: error: %s\n", msg.c_str());
  return code;
}

}  // namespace

namespace hd::cli {
void progress_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}
}  // namespace hd::cli

int main(int argc, char** argv) {
  hd::cli::Context ctx;
  std::vector<std::string> args = hd::cli::normalize_llama_flags(argc, argv);
  for (size_t i = 0; i < args.size(); ++i)
    ctx.command_line += (i ? " " : "") + shell_quote(args[i]);

  CLI::App app{"heterodyne: where and why two llama.cpp configurations of a model disagree"};
  app.set_version_flag("--version", std::string("heterodyne ") + hd::build::kVersion + " (" +
                                        hd::build::kCommit + ", llama.cpp " +
                                        hd::build::kLlamaCommit + ")");
  app.require_subcommand(1);
  hd::cli::add_diff(app, ctx);
  hd::cli::add_show(app, ctx);
  hd::cli::add_export(app, ctx);
  hd::cli::add_verify(app, ctx);
  hd::cli::add_make_model(app, ctx);
  hd::cli::add_quantize(app, ctx);
  hd::cli::add_demo_model(app, ctx);
  hd::cli::add_report(app, ctx);
  hd::cli::add_serve(app, ctx);
  hd::cli::add_capture(app, ctx);
  hd::cli::add_gate(app, ctx);
  hd::cli::add_quant_risk(app, ctx);
  hd::cli::add_length_curve(app, ctx);
  hd::cli::add_sweep(app, ctx);
  hd::cli::add_floor(app, ctx);

  // CLI11 reports a mistyped command as "a subcommand is required"; name what was typed.
  if (args.size() > 1) {
    const std::string& first = args[1];
    const bool known =
        !app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == first; }).empty();
    const bool global =
        first == "--help" || first == "-h" || first == "--help-all" || first == "--version";
    if (!known && !global) {
      return fail(2, std::string(first[0] == '-' ? "unknown option '" : "unknown command '") +
                         first +
                         "' (commands: diff, show, export, verify, make-model, quantize, demo-model, report, serve, capture, calibrate, check; see "
                         "heterodyne --help)");
    }
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  try {
    app.parse(static_cast<int>(argp.size()), argp.data());
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(2, std::string(e.what()) + " (see heterodyne --help)");
  } catch (const hd::InputError& e) {
    return fail(2, e.what());
  } catch (const hd::RuntimeError& e) {
    return fail(1, e.what());
  } catch (const nlohmann::json::exception& e) {
    // JSON read back from a file (an experiment's meta, a reference) that no reader checked
    // more closely: still one line, and a bad-input exit.
    return fail(2, std::string("a stored file is damaged or not heterodyne's: ") + e.what());
  } catch (const std::exception& e) {
    return fail(1, std::string("internal error: ") + e.what());
  }
  return ctx.exit_code;
}
