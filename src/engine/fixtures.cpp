#include "engine/fixtures.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "build_info.h"
#include "common/cache_dir.h"
#include "common/cached_file.h"
#include "engine/model_presets.h"
#include "engine/spawn.h"
#include "errors.h"

namespace hd::engine {
namespace fs = std::filesystem;

namespace {

// What `heterodyne-llama-archs --list` says: every name llama.cpp knows, and the fixtures.
struct Listing {
  std::vector<std::string> known;
  std::vector<FixtureArch> archs;  // sorted by name
};

fs::path fixture_root() { return cache_dir() / "fixtures" / build::kLlamaBuildKey; }

// The generator this build made; HETERODYNE_LLAMA_ARCHS names another (one built elsewhere).
std::string generator() {
  const char* env = std::getenv("HETERODYNE_LLAMA_ARCHS");
  const std::string exe = env && *env ? env : build::kFixtureGenerator;
  if (::access(exe.c_str(), X_OK) != 0) {
    throw RuntimeError("llama.cpp's fixture generator was not built (" + exe +
                       "): build it with make fixtures");
  }
  return exe;
}

// A scratch folder in the cache, removed with everything in it when done.
class WorkDir {
 public:
  WorkDir() {
    static std::atomic<int> serial{0};
    path_ =
        fixture_root() / (".work-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
    std::error_code ec;
    fs::create_directories(path_, ec);
    if (ec) throw RuntimeError("cannot create " + path_.string() + ": " + ec.message());
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last;
}

// Runs the generator with `args`, its stdout to <work>/out.txt and stderr to <work>/err.txt.
// Returns its stdout; RuntimeError naming `what` when it cannot start or does not exit 0.
std::string run_generator(const std::vector<std::string>& args, const WorkDir& work,
                          const std::string& what) {
  const std::string exe = generator();
  const std::string out = (work.path() / "out.txt").string();
  const std::string err = (work.path() / "err.txt").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = spawn_llama_process(pid, exe, args, &fa);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw RuntimeError("cannot start " + exe + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return read_text(out);
  const std::string how = WIFSIGNALED(status)
                              ? "killed by signal " + std::to_string(WTERMSIG(status))
                              : "exit status " + std::to_string(WEXITSTATUS(status));
  const std::string why = last_line(read_text(err));
  throw RuntimeError("llama.cpp's fixture generator failed " + what + " (" + how + ")" +
                     (why.empty() ? "" : ": " + why));
}

Listing parse_listing(const std::string& text) {
  Listing l;
  std::istringstream in(text);
  std::string kind, value;
  while (in >> kind >> value) {
    if (kind == "known") l.known.push_back(value);
    if (kind != "fixture") continue;
    const bool moe = value.ends_with("-moe.gguf");
    const std::string name = value.substr(0, value.size() - (moe ? 9 : 11));
    auto it = std::find_if(l.archs.begin(), l.archs.end(),
                           [&](const FixtureArch& a) { return a.name == name; });
    if (it == l.archs.end()) it = l.archs.insert(l.archs.end(), FixtureArch{name});
    (moe ? it->moe : it->dense) = true;
  }
  std::sort(l.archs.begin(), l.archs.end(),
            [](const FixtureArch& a, const FixtureArch& b) { return a.name < b.name; });
  return l;
}

// The listing, from the cache or (once per llama.cpp build) from the generator.
const Listing& listing() {
  static std::mutex mutex;
  static Listing cached;
  std::lock_guard lock(mutex);
  if (!cached.archs.empty()) return cached;
  const fs::path path = fixture_root() / "archs.txt";
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) cached = parse_listing(read_text(path));
  if (cached.archs.empty()) {
    const WorkDir work;
    const std::string text = run_generator({"--list"}, work, "to list its architectures");
    cached = parse_listing(text);
    if (cached.archs.empty()) {
      throw RuntimeError("llama.cpp's fixture generator listed no architectures");
    }
    write_output_file(path.string(), text, OutputPolicy(true));
  }
  return cached;
}

const FixtureArch& find_fixture(const std::string& arch, bool moe) {
  const Listing& l = listing();
  const std::string lists = " (heterodyne make-model --list-archs lists the " +
                            std::to_string(l.archs.size()) + " it makes)";
  const auto it = std::find_if(l.archs.begin(), l.archs.end(),
                               [&](const FixtureArch& a) { return a.name == arch; });
  if (it == l.archs.end()) {
    const bool known = std::find(l.known.begin(), l.known.end(), arch) != l.known.end();
    const std::string preset = preset_of_arch(arch);
    const std::string instead =
        preset.empty() ? "" : ": make-model --preset " + preset + " writes one";
    throw InputError(known ? "llama.cpp's fixture generator makes no model of architecture '" +
                                 arch + "'" + instead + lists
                           : "llama.cpp names no architecture '" + arch + "'" + lists);
  }
  if (moe && !it->moe) {
    throw InputError("architecture '" + arch + "' has no MoE fixture: leave out --moe");
  }
  if (!moe && !it->dense) {
    throw InputError("architecture '" + arch + "' has only a MoE fixture: add --moe");
  }
  return *it;
}

}  // namespace

std::vector<FixtureArch> fixture_archs() { return listing().archs; }

std::string ensure_fixture(const std::string& arch, bool moe, uint64_t seed) {
  const std::string file = find_fixture(arch, moe).name + (moe ? "-moe.gguf" : "-dense.gguf");
  const fs::path path = fixture_root() / ("seed-" + std::to_string(seed)) / file;
  return ensure_cached(path, [&](const std::string& temporary) {
    // The generator writes the dense and the MoE file of the architecture; the one asked for
    // is kept (the other costs a fraction of a second to make again if it is ever wanted).
    const WorkDir work;
    run_generator({"-a", arch, "-s", std::to_string(seed), "-o", work.path().string()}, work,
                  "on '" + arch + "'");
    std::error_code ec;
    fs::rename(work.path() / file, temporary, ec);
    if (ec) {
      throw RuntimeError("llama.cpp's fixture generator wrote no " + file + ": " + ec.message());
    }
  });
}

void make_fixture(const std::string& arch, bool moe, uint64_t seed, const std::string& out_path,
                  const OutputPolicy& policy) {
  if (out_path.empty()) throw InputError("no output path given for the model");
  check_output_path(out_path, policy);  // a refused output costs no generation
  const std::string cached = ensure_fixture(arch, moe, seed);
  OutputPolicy with_cache = policy;
  with_cache.inputs.push_back(cached);  // -o naming the cached file itself is refused
  OutputFile out(out_path, with_cache);
  std::ifstream in(cached, std::ios::binary);
  std::vector<char> block(size_t{1} << 20);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    out.write(block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw RuntimeError("cannot read " + cached);
  out.commit();
}

}  // namespace hd::engine
