#include "support.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "build_info.h"
#include "engine/model_maker.h"
#include "engine/quantize.h"

namespace fs = std::filesystem;

namespace hd::bench {

const Setup& setup() {
  static Setup s = [] {
    Setup x;
    const char* cache = std::getenv("HETERODYNE_CACHE");
    x.dir = (cache ? fs::path(cache) : fs::path(std::getenv("HOME")) / ".cache" / "heterodyne") /
            "bench";
    fs::create_directories(x.dir);
    x.big_a = x.dir + "/qwen3-0.6b-f16.gguf";
    if (!fs::exists(x.big_a)) engine::make_model({"qwen3-0.6b", 1, "f16"}, x.big_a);
    x.big_b = engine::ensure_quantized(x.big_a, "Q4_K_M", kThreads);
    x.moe_a = x.dir + "/tiny-qwen3moe-f16.gguf";
    if (!fs::exists(x.moe_a)) engine::make_model({"tiny-qwen3moe", 1, "f16"}, x.moe_a);
    x.moe_b = engine::ensure_quantized(x.moe_a, "Q4_K_M", kThreads);
    x.small = x.dir + "/tiny-llama-f16.gguf";
    if (!fs::exists(x.small)) engine::make_model({"tiny-llama", 1, "f16"}, x.small);
    x.text = std::string(build::kLlamaSource) + "/README.md";
    // README.md holds 19 chunks of 128 of the qwen3 vocabulary; with docs/build.md after it,
    // over 60: the runs of 32 chunks read this.
    x.long_text = x.dir + "/long.txt";
    {
      std::ofstream out(x.long_text, std::ios::binary | std::ios::trunc);
      for (const char* f : {"/README.md", "/docs/build.md"}) {
        std::ifstream in(std::string(build::kLlamaSource) + f, std::ios::binary);
        out << in.rdbuf() << "\n";
      }
    }
    x.bin = fs::path(HD_BINARY_DIR) / "heterodyne";
    return x;
  }();
  return s;
}

const Pair& llama3b_pair() {
  static const Pair p = [] {
    Pair x;
    x.a = setup().dir + "/llama3.2-3b-f16.gguf";
    if (!fs::exists(x.a)) engine::make_model({"llama3.2-3b", 1, "f16"}, x.a);
    x.b = engine::ensure_quantized(x.a, "Q4_K_M", kThreads);
    x.text = setup().dir + "/long-3b.txt";
    std::ofstream out(x.text, std::ios::binary | std::ios::trunc);
    for (const std::string& f :
         {setup().long_text, std::string(build::kLlamaSource) + "/tools/server/README.md"}) {
      std::ifstream in(f, std::ios::binary);
      out << in.rdbuf() << "\n";
    }
    return x;
  }();
  return p;
}

Child run(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  Child c;
  rusage ru{};
  wait4(pid, &c.status, 0, &ru);
  c.max_rss_kb = ru.ru_maxrss;
  if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
    std::fprintf(stderr, "benchmark command failed: %s ...\n", args[0].c_str());
    std::exit(1);
  }
  return c;
}

long children_written_bytes() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_oublock * 512L;
}

}  // namespace hd::bench
