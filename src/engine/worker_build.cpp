#include "engine/worker_build.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "build_info.h"
#include "common/shell_quote.h"
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

static const char kSpecForms[] =
    "pinned, npm:node-llama-cpp@X.Y.Z, a llama.cpp checkout (each [,OPTION=VALUE…]) or a "
    "heterodyne-worker executable";

// Why `source` (the part of a spec before its first comma) names no llama.cpp, or "".
static std::string bad_source(const std::string& source) {
  static const std::regex release(R"(npm:node-llama-cpp@[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?)");
  if (source == "pinned" || std::regex_match(source, release)) return "";
  if (source.rfind("npm:node-llama-cpp", 0) == 0) {
    return "'" + source + "' names no release: give npm:node-llama-cpp@X.Y.Z (e.g. " +
           "npm:node-llama-cpp@3.21.1)";
  }
  if (source.rfind("npm:", 0) == 0) {
    return "only node-llama-cpp releases carry llama.cpp: give npm:node-llama-cpp@X.Y.Z, not '" +
           source + "'";
  }
  std::error_code ec;
  if (!fs::is_directory(source, ec)) return "'" + source + "' is not " + kSpecForms;
  if (!fs::is_regular_file(fs::path(source) / "include" / "llama.h", ec)) {
    return "'" + source + "' is not a llama.cpp tree (no include/llama.h)";
  }
  return "";
}

void check_build_spec(const std::string& spec) {
  if (spec.empty() || spec == "pinned") return;
  if (spec.find(',') == std::string::npos && executable(spec)) return;
  auto refuse = [&](const std::string& why) {
    throw InputError("no worker for llama.cpp build '" + spec + "': " + why);
  };
  // The spec is quoted into a shell command line (worker_executable).
  if (spec.find_first_of("'\\\n") != std::string::npos) {
    refuse("a llama.cpp build spec may not contain quotes, backslashes or newlines");
  }
  const size_t comma = spec.find(',');
  if (const std::string why = bad_source(spec.substr(0, comma)); !why.empty()) refuse(why);
  static const std::regex option(R"([A-Za-z_][A-Za-z0-9_]*=[^\s,]*)");
  for (size_t start = comma; start != std::string::npos;) {
    const size_t next = spec.find(',', start + 1);
    const std::string opt =
        spec.substr(start + 1, next == std::string::npos ? next : next - start - 1);
    if (!std::regex_match(opt, option)) {
      refuse("'" + opt + "' is not a CMake OPTION=VALUE (e.g. pinned,GGML_NATIVE=OFF)");
    }
    start = next;
  }
}

std::string worker_executable(const std::string& spec) {
  if (spec.empty() || spec == "pinned") return own_worker();
  if (spec.find(',') == std::string::npos && executable(spec)) return fs::absolute(spec).string();
  check_build_spec(spec);  // before minutes of CMake, which would only say "see configure.log"
  const fs::path script = fs::path(build::kSourceDir) / "scripts" / "worker.sh";
  if (!executable(script)) {
    throw InputError("cannot build a worker for '" + spec + "': " + script.string() +
                     " is missing; build one with scripts/worker.sh and pass its path");
  }
  // The script's lines are progress (forwarded to our stderr as they come, but one behind);
  // its last line is the executable's path, or why it failed, which becomes our one line.
  std::string cmd = shell_quote(script.string());  // a checkout's path may hold spaces
  cmd.append(" '").append(spec).append("' 2>&1");  // spec holds no quote: checked above
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) throw RuntimeError("cannot run " + script.string());
  std::string line, held;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) {
    line += buf.data();
    if (line.empty() || line.back() != '\n') continue;
    line.pop_back();
    if (!held.empty()) std::fprintf(stderr, "%s\n", held.c_str());
    held = std::move(line);
    line.clear();
  }
  if (!line.empty()) held = line;
  const int status = ::pclose(p);
  if (status == 0 && executable(held)) return held;
  const std::string why = held.rfind("worker.sh: ", 0) == 0 ? held.substr(11) : held;
  const std::string msg = "no worker for llama.cpp build '" + spec + "': " + why;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) throw InputError(msg);
  throw RuntimeError(msg);
}

}  // namespace hd::engine
