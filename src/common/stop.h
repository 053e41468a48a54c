// The process's stop request: set by the SIGINT/SIGTERM handler (cli/main.cpp), read by every
// loop that should end cleanly after the unit of work in flight (a run's chunk, serve's loop).
#pragma once

namespace hd {

void request_stop();  // async-signal-safe
bool stop_requested();

}  // namespace hd
