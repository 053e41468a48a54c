#include "engine/worker_build.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "build_info.h"
#include "errors.h"

namespace fs = std::filesystem;

namespace hd::engine {

static bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// The worker built with this binary: beside it (build/heterodyne-worker), or where
// HETERODYNE_WORKER says.
static std::string own_worker() {
  if (const char* env = std::getenv("HETERODYNE_WORKER")) {
    if (!executable(env)) throw InputError(std::string("HETERODYNE_WORKER '") + env + "' is not an executable");
    return env;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  for (const fs::path& dir : {self.parent_path(), fs::path(build::kBinaryDir)}) {
    if (executable(dir / "heterodyne-worker")) return (dir / "heterodyne-worker").string();
  }
  throw InputError("no heterodyne-worker next to this binary: build it (cmake --build build "
                   "--target heterodyne-worker) or set HETERODYNE_WORKER");
}

std::string worker_executable(const std::string& spec) {
  if (spec.empty() || spec == "pinned") return own_worker();
  if (spec.find(',') == std::string::npos && executable(spec)) return fs::absolute(spec).string();
  if (spec.find_first_of("'\\\n") != std::string::npos) {
    throw InputError("a llama.cpp build spec may not contain quotes, backslashes or newlines");
  }
  const fs::path script = fs::path(build::kSourceDir) / "scripts" / "worker.sh";
  if (!executable(script)) {
    throw InputError("cannot build a worker for '" + spec + "': " + script.string() +
                     " is missing; build one with scripts/worker.sh and pass its path");
  }
  // The script prints progress on stderr (ours) and the executable's path as its last line.
  std::string cmd = script.string();
  cmd.append(" '").append(spec).append("'");  // spec holds no quote: checked above
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) throw RuntimeError("cannot run " + script.string());
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const std::string last = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  if (status != 0 || !executable(last)) {
    const bool input = WIFEXITED(status) && WEXITSTATUS(status) == 2;
    const std::string msg = "could not build a worker for llama.cpp build '" + spec +
                            "' (scripts/worker.sh failed; its message is above)";
    if (input) throw InputError(msg);
    throw RuntimeError(msg);
  }
  return last;
}

}  // namespace hd::engine
