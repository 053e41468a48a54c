// heterodyne diff: run two arms over a text chunk by chunk into an experiment file.
#pragma once
#include <functional>
#include <string>

#include "run/config.h"

namespace hd::run {

// One line of progress per chunk (the CLI prints it to stderr).
using ProgressFn = std::function<void(const std::string&)>;

// Set from a signal handler: the run stops cleanly after the chunk in flight.
void request_stop();
bool stop_requested();

// Runs a new diff into `out`. Returns the number of chunks still missing (0 when complete).
int diff_run(const DiffConfig& config, const std::string& out, bool replace,
             const std::string& command_line, const ProgressFn& progress);

// Finishes an interrupted diff from its own stored configuration.
int diff_resume(const std::string& path, const std::string& command_line,
                const ProgressFn& progress);

}  // namespace hd::run
