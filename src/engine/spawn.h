// Starting a llama.cpp process (the worker, the fixture generator): argv from `args`, this
// process's environment plus GGML_NO_BACKTRACE=1 (ggml's abort would otherwise try to attach
// gdb for a backtrace: slow, and of no use to the user).
#pragma once
#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace hd::engine {

// posix_spawn's return value (0 on success); `pid` is set on success.
int spawn_llama_process(pid_t& pid, const std::string& exe, const std::vector<std::string>& args,
                        const posix_spawn_file_actions_t* actions);

}  // namespace hd::engine
