// heterodyne: where and why two llama.cpp configurations of a model disagree.
// The one place where errors become a line on stderr and an exit code.
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "build_info.h"
#include "kinds/command_line/arm_flags.h"
#include "kinds/command_line/help_format.h"
#include "cli/commands.h"
#include "kinds/registry.h"
#include "commit.h"
#include "common/fatal.h"
#include "common/output_file.h"
#include "common/shell_quote.h"
#include "common/stop.h"
#include "common/utf8.h"
#include "engine/system.h"
#include "engine/threads.h"
#include "errors.h"

namespace {

void on_signal(int) { hd::request_stop(); }

int fail(int code, const std::string& msg) {
  std::fprintf(stderr, "heterodyne: error: %s\n", msg.c_str());
  return code;
}

// A byte string as it can be printed: valid UTF-8 kept, other bytes as \xNN.
std::string printable_bytes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto bad = hd::first_invalid_utf8(std::string_view(s).substr(i));
    const size_t good = bad ? *bad : s.size() - i;
    out.append(s, i, good);
    i += good;
    if (i < s.size()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += hex;
      ++i;
    }
  }
  return out;
}

// An option given an empty value ("--max-chunks ''", "--chunk="): a slip, not "all" or the
// default. Looked for before CLI11 reads the line, so the message says so whatever else the
// option checks. Returns the option's name, or "".
std::string option_with_empty_value(CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() < 2) return "";
  CLI::App* sub = nullptr;
  for (CLI::App* s : app.get_subcommands({})) {
    if (s->get_name() == args[1]) sub = s;
  }
  if (sub == nullptr) return "";
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') continue;
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const CLI::Option* opt = sub->get_option_no_throw(name);
    if (opt == nullptr || opt->get_items_expected_max() == 0) continue;  // unknown, or a flag
    const bool empty = eq != std::string::npos ? eq + 1 == a.size()
                                               : i + 1 < args.size() && args[i + 1].empty();
    if (empty) return name;
  }
  return "";
}

// llama.cpp users type -m (--model) for the model; a command of two arms takes --a and --b
// instead, which CLI11 would only call "arguments not expected". Returns the line that says
// so, or "".
std::string model_flag_of_two_arms(CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() < 2) return "";
  const auto subs = app.get_subcommands([&](CLI::App* s) { return s->get_name() == args[1]; });
  if (subs.empty()) return "";
  const CLI::App& sub = *subs.front();
  if (sub.get_option_no_throw("--a") == nullptr || sub.get_option_no_throw("-m") != nullptr)
    return "";
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string name = args[i].substr(0, args[i].find('='));
    if (name != "-m" && name != "--model") continue;
    const bool quant = sub.get_option_no_throw("--b-quant") != nullptr;
    return args[1] + " runs two arms: give arm A's model with --a, not " + name + " (and B's with --b" +
           (quant ? ", or --b-quant TYPE to quantize A" : "") + ")";
  }
  return "";
}

// Every registered subcommand, in the order --help lists them: read from the app, so a new
// command is named without anyone remembering to add it here.
std::string command_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // hidden (an example kind): not listed by --help
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
}

// What is refused before CLI11 reads the line (exit 2), or "" when nothing is.
std::string refusal_before_parse(CLI::App& app, const std::vector<std::string>& args) {
  // CLI11 reports a mistyped command as "a subcommand is required"; name what was typed.
  if (args.size() > 1) {
    const std::string& first = args[1];
    const bool known =
        !app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == first; }).empty();
    const bool global =
        first == "--help" || first == "-h" || first == "--help-all" || first == "--version";
    if (!known && !global) {
      return std::string(first[0] == '-' ? "unknown option '" : "unknown command '") + first +
             "' (commands: " + command_names(app) + "; see heterodyne --help)";
    }
  }
  // The command line is stored as JSON text (provenance): it must be UTF-8, and a path that is
  // not would be stored as something other than itself.
  for (size_t i = 1; i < args.size(); ++i) {
    if (const auto bad = hd::first_invalid_utf8(args[i])) {
      return "argument " + std::to_string(i) + " ('" + printable_bytes(args[i]) +
             "') is not valid UTF-8 (at byte " + std::to_string(*bad) +
             "); heterodyne records paths and its command line as UTF-8 text";
    }
  }
  if (const std::string opt = option_with_empty_value(app, args); !opt.empty()) {
    return opt + " needs a value, not an empty string";
  }
  return model_flag_of_two_arms(app, args);
}

}  // namespace


int main(int argc, char** argv) {
  hd::engine::wait_passively(argv);  // may run this program again, with OMP_WAIT_POLICY set
  hd::cli::Context ctx;
  std::vector<std::string> args = hd::cli::normalize_llama_flags(argc, argv);
  for (size_t i = 0; i < args.size(); ++i)
    ctx.command_line += (i ? " " : "") + hd::shell_quote(args[i]);

  CLI::App app{"heterodyne: where and why two llama.cpp configurations of a model disagree"};
  app.set_version_flag("--version", std::string("heterodyne ") + hd::build::kVersion + " (" +
                                        hd::build::kCommit + ", llama.cpp " +
                                        hd::build::kLlamaCommit + ")");
  app.require_subcommand(1);
  // Set before the commands are added: each takes the formatter and --help-all from the app.
  app.formatter(std::make_shared<hd::cli::HelpFormatter>());
  app.set_help_all_flag("--help-all", "every flag, the rare ones too");
  hd::kinds::add_kind_commands(app, ctx);  // diff first: the command most users want
  hd::cli::add_show(app, ctx);
  hd::cli::add_export(app, ctx);
  hd::cli::add_verify(app, ctx);
  hd::cli::add_make_model(app, ctx);
  hd::cli::add_points(app, ctx);
  hd::cli::add_quantize(app, ctx);
  hd::cli::add_demo_model(app, ctx);
  hd::cli::add_report(app, ctx);
  hd::cli::add_serve(app, ctx);
  hd::cli::add_capture(app, ctx);
  hd::cli::add_calibrate(app, ctx);
  hd::cli::add_quant_risk(app, ctx);
  hd::cli::add_merge(app, ctx);
  hd::cli::add_slurm(app, ctx);

  if (const std::string why = refusal_before_parse(app, args); !why.empty()) return fail(2, why);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // An abort inside llama.cpp or a model file cut short under its mapping: one line, exit 1.
  hd::engine::install_abort_handler();
  hd::fatal::install_sigbus_handler();
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  try {
    app.parse(static_cast<int>(argp.size()), argp.data());
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    const int code = app.exit(e);
    try {
      hd::flush_stdout();
    } catch (const hd::RuntimeError& err) {
      return fail(1, err.what());
    }
    return code;
  } catch (const CLI::ParseError& e) {
    return fail(2, std::string(e.what()) + " (see heterodyne --help)");
  } catch (const hd::InputError& e) {
    return fail(2, e.what());
  } catch (const hd::RuntimeError& e) {
    return fail(1, e.what());
  } catch (const hd::Stopped& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 130;
  } catch (const nlohmann::json::exception&) {
    // JSON read back from a file (an experiment's meta, a reference) that no reader checked
    // more closely: still one line, a bad-input exit, and not the library's wording.
    return fail(2,
                "a stored file (an experiment's metadata or a reference's JSON) is damaged or "
                "was not written by heterodyne: a value has the wrong form");
  } catch (const std::exception& e) {
    return fail(1, std::string("internal error: ") + e.what());
  }
  // What went to stdout must have arrived: a full disk is a failure, not a success.
  try {
    hd::flush_stdout();
  } catch (const hd::RuntimeError& e) {
    return fail(1, e.what());
  }
  return ctx.exit_code;
}
