#include "cli/arm_flags.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "errors.h"

namespace hd::cli {

void add_arm_flags(CLI::App& cmd, ArmFlags& f, const std::string& p) {
  f.prefix = p;
  const std::string who = p.empty() ? "both arms" : "arm " + p.substr(0, 1).append(" only");
  cmd.add_option("--" + p + "ctk,--" + p + "cache-type-k", f.cache_type_k,
                 "K cache type for " + who + " (f16)");
  cmd.add_option("--" + p + "ctv,--" + p + "cache-type-v", f.cache_type_v,
                 "V cache type for " + who + " (f16)");
  cmd.add_option("--" + p + "fa,--" + p + "flash-attn", f.flash_attn,
                 "flash attention on|off|auto for " + who + " (auto)");
  cmd.add_option("--" + p + "ub,--" + p + "ubatch-size", f.n_ubatch,
                 "physical batch size for " + who + " (512)");
  if (p.empty()) {
    cmd.add_option("-t,--threads", f.n_threads, "threads for both arms (default: all cores)");
  } else {
    cmd.add_option("--" + p + "t,--" + p + "threads", f.n_threads, "threads for " + who);
  }
  cmd.add_option("--" + p + "dev,--" + p + "device", f.device,
                 "device for " + who + ": cpu, cuda0, vulkan0, … (cpu)");
  cmd.add_option("--" + p + "ngl,--" + p + "n-gpu-layers", f.n_gpu_layers,
                 "layers on the device or RPC servers for " + who + " (all)");
  cmd.add_option("--" + p + "rpc", f.rpc,
                 "llama.cpp RPC servers host:port[,host:port…] holding the layers of " + who)
      ->expected(1);  // one comma-separated list per flag: it never takes the next argument
  cmd.add_option("--" + p + "llama-build", f.llama_build,
                 "another llama.cpp for " + who +
                     ", run in a worker process: pinned[,OPT=V…], a llama.cpp checkout, "
                     "npm:node-llama-cpp@X.Y.Z or a heterodyne-worker executable");
}

void add_chunk_flags(CLI::App& cmd, int& chunk, int& max_chunks, std::string& score_from) {
  cmd.add_option("--chunk,-c", chunk, "tokens per chunk, each from an empty KV cache")
      ->capture_default_str();
  cmd.add_option("--max-chunks", max_chunks, "at most this many chunks (0: all)")
      ->capture_default_str();
  cmd.add_option("--score-from", score_from,
                 "first predicted token scored: N, or 'half' (llama-perplexity's convention)")
      ->capture_default_str();
}

engine::ArmSettings resolve_arm(const std::string& model, const ArmFlags& shared,
                                const ArmFlags& own) {
  engine::ArmSettings s;
  s.model = model;
  auto pick = [](auto& out, const auto& a, const auto& b) {
    if (b)
      out = *b;
    else if (a)
      out = *a;
  };
  pick(s.cache_type_k, shared.cache_type_k, own.cache_type_k);
  pick(s.cache_type_v, shared.cache_type_v, own.cache_type_v);
  pick(s.flash_attn, shared.flash_attn, own.flash_attn);
  pick(s.n_ubatch, shared.n_ubatch, own.n_ubatch);
  pick(s.n_threads, shared.n_threads, own.n_threads);
  pick(s.device, shared.device, own.device);
  pick(s.n_gpu_layers, shared.n_gpu_layers, own.n_gpu_layers);
  std::optional<std::string> rpc;
  pick(rpc, shared.rpc, own.rpc);
  const std::string rpc_flag = own.rpc ? "--" + own.prefix + "rpc" : "--rpc";
  if (rpc) {
    // Split here, not by CLI11: an empty entry ("a:1,,b:2", ",") is a slip, named as such.
    size_t start = 0;
    for (;;) {
      const size_t comma = rpc->find(',', start);
      const std::string server = rpc->substr(start, comma - start);
      if (server.empty()) {
        throw InputError(rpc_flag + " list '" + *rpc +
                         "' has an empty entry: give host:port[,host:port…]");
      }
      s.rpc.push_back(server);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  pick(s.llama_build, shared.llama_build, own.llama_build);
  for (char& c : s.device) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // 0 means "default" inside; a user who types -t 0 made a mistake, not a request.
  if ((shared.n_threads || own.n_threads) && s.n_threads < 1) {
    throw InputError("thread count must be at least 1, not " + std::to_string(s.n_threads));
  }
  return s;
}

std::string stored_path(const std::string& path) {
  if (path.empty() || path == "-") return path;
  return std::filesystem::absolute(path).lexically_normal().string();
}

CLI::Validator finite_number(double lo, bool lo_allowed) {
  return CLI::Validator(
      [lo, lo_allowed](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && end == text.c_str() + text.size();
        if (!number || !std::isfinite(v) || v < lo || (v == lo && !lo_allowed)) {
          return "must be a finite number " + std::string(lo_allowed ? ">= " : "> ") +
                 fmt::format("{}", lo) + ", not '" + text + "'";
        }
        return "";
      },
      "", "finite number");
}

std::vector<std::string> normalize_llama_flags(int argc, char** argv) {
  static const std::set<std::string> single_dash = {"-ctk", "-ctv", "-fa", "-ub", "-ngl", "-dev"};
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const std::string name = a.substr(0, a.find('='));
    if (single_dash.count(name)) a = "-" + a;
    out.push_back(a);
  }
  return out;
}

}  // namespace hd::cli
