// Writing an output never destroys what it should not (issue 15, class 1). The suite runs as
// root here, and root may replace /dev/null: every command that writes a file is tried against
// what must never be replaced — a device node, a FIFO, a socket, a directory, a dangling link,
// one of its own inputs (by name, symbolic link and hard link) and, without --force, any file —
// and the thing at the path must be exactly as it was afterwards. Also: a --force rerun that
// fails or is stopped keeps the old experiment, and output that cannot reach stdout is exit 1.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::expect_refused;
using hd::test::read_file;
using hd::test::run_cli;
using hd::test::shared_path;

namespace {

std::string dir() {
  static const std::string d = hd::test::temp_dir("outputs");
  return d;
}
std::string at(const std::string& name) { return dir() + "/" + name; }

std::string model() { return shared_path("models/stories260K.gguf"); }
std::string text() { return shared_path("corpora/tom-sawyer.txt"); }

// A complete experiment, made once.
const std::string& experiment() {
  static const std::string p = hd::test::make_experiment(at("real.hdy"), {"--no-floor"});
  return p;
}

// How the thing at a path looks: kind, device and inode, size, and bytes for a regular file.
struct Snapshot {
  bool exists = false;
  mode_t kind = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  dev_t rdev = 0;
  std::string bytes;
  bool operator==(const Snapshot&) const = default;
};
Snapshot snap(const std::string& p) {
  Snapshot s;
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return s;
  s.exists = true;
  s.kind = st.st_mode & S_IFMT;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  s.rdev = st.st_rdev;
  if (S_ISREG(st.st_mode)) s.bytes = read_file(p);
  return s;
}

// Every writer, with OUT standing for the output path under test.
std::vector<std::vector<std::string>> writers(const std::string& out) {
  const std::string exp = experiment();
  return {
      {"export", exp, "--positions", "-o", out, "--force"},
      {"report", exp, "-o", out, "--force"},
      {"report", exp, "--data", out, "--force"},
      {"make-model", "--preset", "tiny-llama", "-o", out, "--force"},
      {"quantize", model(), out, "Q8_0", "--force"},
      {"diff", "--a", model(), "--b-quant", "Q8_0", "-f", text(), "--chunk", "64", "--max-chunks",
       "1", "--no-floor", "-o", out, "--force"},
      {"sweep", "--a", model(), "--b", model(), "--b-ub", "7", "-f", text(), "--chunk", "64",
       "--max-chunks", "1", "-o", out, "--force"},
      {"floor", "-m", model(), "-f", text(), "--chunk", "64", "--max-chunks", "1", "--ub", "7",
       "-o", out, "--force"},
  };
}

}  // namespace

TEST(OutputPaths, NoWriterReplacesADeviceFifoSocketDirectoryOrDanglingLink) {
  HD_REQUIRE_SHARED();
  ASSERT_FALSE(experiment().empty());
  const std::string fifo = at("fifo.out"), sock = at("sock.out"), sub = at("dir.out"),
                    dangling = at("dangling.out");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_directory(sub);
  fs::create_symlink(at("nothing-here"), dangling);
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::vector<std::pair<std::string, std::string>> targets = {
      {"/dev/null", "is a character device, not a regular file"},
      {fifo, "is a FIFO, not a regular file"},
      {sock, "is a socket, not a regular file"},
      {sub, "is a directory"},
      {dangling, "is a symbolic link that leads nowhere"}};
  for (const auto& [target, phrase] : targets) {
    const Snapshot before = snap(target);
    for (const auto& args : writers(target)) {
      expect_refused(args, phrase);
      EXPECT_TRUE(snap(target) == before) << target << " changed under " << args[0];
    }
  }
  ::close(s);
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a device";
}

TEST(OutputPaths, AnOutputIsNeverOneOfTheInputs) {
  HD_REQUIRE_SHARED();
  const std::string exp = at("inputs.hdy");
  fs::copy_file(experiment(), exp, fs::copy_options::overwrite_existing);
  const std::string m = at("inputs.gguf");
  fs::copy_file(model(), m, fs::copy_options::overwrite_existing);
  fs::create_symlink(exp, at("exp-link.html"));
  fs::create_hard_link(exp, at("exp-hard.csv"));
  fs::create_symlink(m, at("model-link.hdy"));
  fs::create_hard_link(m, at("model-hard.gguf"));
  const Snapshot exp_before = snap(exp), model_before = snap(m);
  for (const std::string& out : {exp, at("exp-link.html"), at("exp-hard.csv")}) {
    expect_refused({"report", exp, "-o", out, "--force"}, "is the same file as the input");
    expect_refused({"report", exp, "--data", out, "--force"}, "is the same file as the input");
    expect_refused({"export", exp, "--positions", "-o", out, "--force"},
                   "is the same file as the input");
  }
  for (const std::string& out : {m, at("model-link.hdy"), at("model-hard.gguf")}) {
    expect_refused({"diff", "--a", m, "--b-quant", "Q8_0", "-f", text(), "--chunk", "64",
                    "--max-chunks", "1", "-o", out, "--force"},
                   "is the same file as the input");
    expect_refused({"quantize", m, out, "Q8_0", "--force"}, "is the same file as the input");
    expect_refused({"floor", "-m", m, "-f", text(), "--chunk", "64", "--max-chunks", "1", "--ub",
                    "7", "-o", out, "--force"},
                   "is the same file as the input");
  }
  expect_refused({"diff", "--a", m, "--b-quant", "Q8_0", "-f", text(), "--chunk", "64", "-o",
                  text(), "--force"},
                 "is the same file as the input");
  expect_refused({"report", exp, "-o", at("same.out"), "--data", at("same.out")},
                 "name the same file");
  EXPECT_TRUE(snap(exp) == exp_before);
  EXPECT_TRUE(snap(m) == model_before);
}

TEST(OutputPaths, AnExistingFileIsReplacedOnlyWithForce) {
  HD_REQUIRE_SHARED();
  const std::string exp = experiment();
  struct Case {
    std::vector<std::string> args;  // without --force
    std::string out;
  };
  const std::vector<Case> cases = {
      {{"make-model", "--preset", "tiny-llama", "-o", at("exists.gguf")}, at("exists.gguf")},
      {{"quantize", model(), at("exists-q.gguf"), "Q8_0"}, at("exists-q.gguf")},
      {{"report", exp, "-o", at("exists.html")}, at("exists.html")},
      {{"report", exp, "--data", at("exists.json")}, at("exists.json")},
      {{"export", exp, "--positions", "-o", at("exists.csv")}, at("exists.csv")},
  };
  for (const Case& c : cases) {
    hd::test::write_file(c.out, "precious\n");
    expect_refused(c.args, "already exists");
    EXPECT_EQ(read_file(c.out), "precious\n") << c.args[0];
    std::vector<std::string> forced = c.args;
    forced.push_back("--force");
    const CliResult r = run_cli(forced);
    EXPECT_EQ(r.exit_code, 0) << c.args[0] << "\n" << r.err;
    EXPECT_NE(read_file(c.out), "precious\n") << c.args[0] << " did not replace it with --force";
    for (const auto& e : fs::directory_iterator(dir())) {
      EXPECT_EQ(e.path().string().find(".part"), std::string::npos)
          << "left behind: " << e.path();
    }
  }
}

TEST(OutputPaths, AFailedOrStoppedForcedRerunKeepsTheOldExperiment) {
  HD_REQUIRE_SHARED();
  const std::string out = at("rerun.hdy");
  fs::copy_file(experiment(), out, fs::copy_options::overwrite_existing);
  const Snapshot before = snap(out);
  // Fails while loading (a model that is not GGUF), after loading (text shorter than a chunk).
  hd::test::write_file(at("not-a-model.gguf"), "hello");
  hd::test::write_file(at("short.txt"), "Too short.");
  expect_refused({"diff", "--a", at("not-a-model.gguf"), "--b-quant", "Q8_0", "-f", text(), "-o",
                  out, "--force"},
                 "is not a GGUF file");
  expect_refused({"diff", "--a", model(), "--b-quant", "Q8_0", "-f", at("short.txt"), "--chunk",
                  "64", "-o", out, "--force"},
                 "fewer than one chunk");
  EXPECT_TRUE(snap(out) == before);
  // A full disk while the first chunk is stored (a file-size limit above the header, below a
  // chunk with its residuals): exit 1, "nothing was stored", and the old experiment is whole.
  const std::string full_err = at("full.err");
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit lim{65536, 65536};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    ::signal(SIGXFSZ, SIG_IGN);
    std::string bin = HD_BINARY;
    std::vector<std::string> args = {bin, "diff", "--a", model(), "--b-quant", "Q8_0", "-f",
                                      text(), "--chunk", "256", "--max-chunks", "2",
                                      "--save-residuals", "-o", out, "--force"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::freopen(full_err.c_str(), "w", stderr);
    ::execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_NE(read_file(full_err).find("nothing was stored ('" + out + "' is as it was)"),
            std::string::npos)
      << read_file(full_err);
  EXPECT_TRUE(snap(out) == before) << "a full disk on the rerun changed the old experiment";
  EXPECT_FALSE(fs::exists(out + ".part"));
  // SIGINT before the first chunk is stored — while B is being quantized into a private cache,
  // seconds for a 32000-token model, seen by its temporary file appearing: exit 130,
  // "nothing written", the old file whole.
  const std::string slow = at("tiny-llama.gguf");
  ASSERT_EQ(run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o", slow, "--force"})
                .exit_code,
            0);
  const std::string cache = hd::test::temp_dir("outputs-cache");
  hd::test::ScopedCacheDir private_cache(cache);
  const std::string err = at("sigint.err");
  const int child = hd::test::spawn_cli({"diff", "--a", slow, "--b-quant", "Q4_K_M", "-f", text(),
                                         "--chunk", "64", "--max-chunks", "2", "-o", out,
                                         "--force"},
                                        "/dev/null", err);
  const auto quantizing = [&] {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cache + "/quantized", ec)) {
      if (e.path().string().find(".part-") != std::string::npos) return true;
    }
    return false;
  };
  bool seen = false;
  for (int i = 0; i < 6000 && !seen; ++i) {
    seen = quantizing();
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(seen) << read_file(err);
  ::kill(child, SIGINT);
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_file(err);
  EXPECT_NE(read_file(err).find("nothing written"),
            std::string::npos)
      << read_file(err);
  EXPECT_TRUE(snap(out) == before);
  EXPECT_FALSE(fs::exists(out + ".part"));
}

TEST(OutputPaths, OutputThatCannotReachStdoutIsExitOne) {
  HD_REQUIRE_SHARED();
  const std::string exp = experiment();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"show", exp}, {"show", exp, "--json"},
        {"export", exp, "--positions"}, {"report", exp, "-o", "-"}, {"--help"}}) {
    const std::string err = at("full.err");
    const int pid = hd::test::spawn_cli(args, "/dev/full", err);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string e = read_file(err);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << args[0] << " " << status;
    EXPECT_NE(e.find("cannot write to standard output"), std::string::npos) << e;
    EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
  }
}
