#include "kinds/bisect/bisect_probe.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "analysis/against_floor.h"
#include "engine/worker_build.h"
#include "errors.h"
#include "kinds/diff/diff_run.h"
#include "kinds/views.h"

namespace fs = std::filesystem;

namespace hd::kinds::bisect {

namespace {
// flock on CLONE.lock for a scope: scripts/bisect-git.sh takes the same lock to fetch.
class CloneLock {
 public:
  explicit CloneLock(const std::string& clone) {
    if (clone.empty()) return;
    fd_ = ::open((clone + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) throw RuntimeError("cannot lock " + clone + ".lock");
  }
  ~CloneLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  CloneLock(const CloneLock&) = delete;
  CloneLock& operator=(const CloneLock&) = delete;

 private:
  int fd_ = -1;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Built build_candidate(const BisectConfig& c, const Candidate& k, const std::string& clone,
                      const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  Built b;
  try {
    const CloneLock lock(k.commit.empty() ? "" : clone);
    if (!k.commit.empty()) run_script("bisect-git.sh", {"checkout", clone, k.commit});
    const std::string spec = build_spec(c, k, clone);
    progress("building " + k.name + " (" + spec + "; cached after the first time)");
    b.worker = engine::worker_executable(spec);
  } catch (const InputError& e) {
    b.error = e.what();
  } catch (const RuntimeError& e) {
    b.error = e.what();
  }
  b.seconds = seconds_since(t0);
  return b;
}

const std::vector<std::string>& criteria() {
  static const std::vector<std::string> names = {"kl", "flips", "exact"};
  return names;
}

std::string criterion_text(const std::string& criterion) {
  if (criterion == "flips") return "differs: at least one top-1 token changes";
  if (criterion == "exact") return "differs: any KL is not exactly 0 (or an NLL differs)";
  return "differs: mean KL's 95 % interval clears the floor of both builds (A vs A', B vs B'); "
         "against a floor that is exactly 0, any KL";
}

nlohmann::json probe_figures(const nlohmann::json& d) {
  const nlohmann::json& t = d.at("top1_change");
  const int64_t n = t.at("n").get<int64_t>();
  const double rate = t.at("rate").is_number() ? t["rate"].get<double>() : 0.0;  // null: no positions
  nlohmann::json f = {
      {"kl_mean", d.at("kl_mean")},
      {"kl_ci95", d.at("kl_ci95")},
      {"bitwise_identical", d.at("bitwise_identical")},
      {"n_scored", d.at("n_scored")},
      {"flips", static_cast<int64_t>(std::llround(rate * static_cast<double>(n)))},
      {"top1_change", t},
      {"floor_kl_mean", d.at("floor_kl_mean")},
      {"floor_kl_ci95", d.at("floor_kl_ci95")},
      {"floor_bitwise", d.at("floor").at("bitwise_identical")},
      {"floor_top1_change", d.at("floor_top1_change")},
      {"standing", d.at("standing")},
      {"ppl_a", d.at("ppl_a")},
      {"ppl_b", d.at("ppl_b")},
      {"n_chunks", d.at("n_chunks")},
  };
  for (const char* arm : {"floor_a", "floor_b"}) {
    if (d.contains(arm) && d[arm].is_object()) f[arm] = d[arm].at("kl_mean");
  }
  return f;
}

bool differs(const nlohmann::json& f, const std::string& criterion) {
  if (criterion == "exact") return !f.at("bitwise_identical").get<bool>();
  if (criterion == "flips") return f.at("flips").get<int64_t>() > 0;
  if (f.at("bitwise_identical").get<bool>()) return false;
  // Against a floor that is exactly 0 any KL is the build's, however few the chunks and wide
  // the interval: each build re-split gave the same bits, so noise gives none.
  if (f.at("floor_bitwise").get<bool>()) return true;
  bool includes_zero = false, below = false;
  for (const auto& s : f.at("standing").value("kl", nlohmann::json::array())) {
    const std::string text = s.get<std::string>();
    includes_zero |= text == analysis::kIncludesZero;
    below |= text == analysis::kBelowFloor;
  }
  return !below && !includes_zero;
}

nlohmann::json diff_builds(const BisectConfig& c, const std::string& good_worker,
                           const std::string& probe_worker) {
  std::string dir = (fs::temp_directory_path() / "heterodyne-bisect-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) throw RuntimeError("cannot make a temporary directory");
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove{dir};
  run::DiffConfig d;
  d.a = c.arm;
  d.a.llama_build = good_worker;
  d.b = c.arm;
  d.b.llama_build = probe_worker;
  d.text_file = c.text_file;
  d.token_ids = c.token_ids;
  d.chunk = c.chunk;
  d.max_chunks = c.max_chunks;
  // Every chunk's floor, as before the sample: the criterion reads the floor as a bound, and a
  // stored bisect's probes must all be read against floors measured alike.
  d.floor_chunks = "all";
  const std::string path = dir + "/probe.hdy";
  // A stop (Ctrl-C) ends the diff after its chunk in flight: an unfinished probe is no probe.
  if (run::diff_run(d, path, false, "heterodyne bisect (probe)", [](const Progress&) {}).missing != 0)
    throw Stopped("stopped during a probe's diff");
  ShowRequest json;
  json.json = true;
  return probe_figures(nlohmann::json::parse(show_experiment(path, json).text));
}

}  // namespace hd::kinds::bisect
