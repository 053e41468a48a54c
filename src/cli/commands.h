// Each subcommand registers itself on the app; its callback sets the process exit code.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "common/progress.h"
#include "run/chunk_loop.h"

namespace hd::cli {

struct Context {
  std::string command_line;  // the whole invocation, shell-quoted, for provenance
  int exit_code = 0;
};

void add_diff(CLI::App& app, Context& ctx);
void add_show(CLI::App& app, Context& ctx);
void add_export(CLI::App& app, Context& ctx);
void add_verify(CLI::App& app, Context& ctx);
void add_make_model(CLI::App& app, Context& ctx);
void add_quantize(CLI::App& app, Context& ctx);
void add_demo_model(CLI::App& app, Context& ctx);
void add_report(CLI::App& app, Context& ctx);
void add_serve(CLI::App& app, Context& ctx);
void add_capture(CLI::App& app, Context& ctx);
void add_gate(CLI::App& app, Context& ctx);  // calibrate, check
void add_quant_risk(CLI::App& app, Context& ctx);
void add_length_curve(CLI::App& app, Context& ctx);
void add_sweep(CLI::App& app, Context& ctx);
void add_floor(CLI::App& app, Context& ctx);

// Progress lines go to stderr, so stdout stays clean for tables and JSON; with
// HETERODYNE_PROGRESS=json each is one JSON object (common/progress.h).
void progress_line(const Progress& p);

// The last line of a chunked run (diff, sweep): written, stopped with chunks to go (and how to
// finish), or stopped before anything was stored. Returns the exit code (0, or 130 stopped).
int report_run_end(const run::RunEnd& end, const std::string& command, const std::string& path);

}  // namespace hd::cli
