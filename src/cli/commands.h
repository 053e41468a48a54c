// The commands that are not experiment kinds register themselves on the app (each kind's
// command comes from its registration, kinds/registry.h); a callback sets the exit code.
#pragma once
#include <CLI/CLI.hpp>

#include "kinds/command_line/command_line.h"

namespace hd::cli {

void add_show(CLI::App& app, Context& ctx);
void add_export(CLI::App& app, Context& ctx);
void add_verify(CLI::App& app, Context& ctx);
void add_make_model(CLI::App& app, Context& ctx);
void add_points(CLI::App& app, Context& ctx);
void add_quantize(CLI::App& app, Context& ctx);
void add_demo_model(CLI::App& app, Context& ctx);
void add_report(CLI::App& app, Context& ctx);
void add_serve(CLI::App& app, Context& ctx);
void add_capture(CLI::App& app, Context& ctx);
void add_calibrate(CLI::App& app, Context& ctx);  // the gate's tolerances (check: kinds/check/)
void add_quant_risk(CLI::App& app, Context& ctx);
void add_merge(CLI::App& app, Context& ctx);
void add_slurm(CLI::App& app, Context& ctx);


}  // namespace hd::cli
