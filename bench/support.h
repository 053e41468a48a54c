// What the benchmark files share: the models (made once into ~/.cache/heterodyne/bench), a
// child process runner that measures peak RSS, and the bytes children wrote to storage.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace hd::bench {

inline constexpr int kThreads = 2;

struct Setup {
  std::string dir, big_a, big_b, small, moe_a, moe_b, text, long_text, bin;
};

// Makes the models on first use.
const Setup& setup();

// The llama3.2-3b preset (Llama-3.2-3B's shapes) f16 and its Q4_K_M, made on first use into the
// benchmark cache (6.4 GB and 1.9 GB): bench_mid_size.cpp's and bench_3b.cpp's pair. `text` is
// the long text with llama.cpp's server README (106 KB) after it, 155 KB: room for 32 chunks of
// 512, the first 16 of them the long text's own.
struct Pair {
  std::string a, b, text;
};
const Pair& llama3b_pair();

struct Child {
  int status = 0;
  long max_rss_kb = 0;
};

// Runs args (args[0] a path) with stdout and stderr discarded; exits the benchmark if it fails.
Child run(const std::vector<std::string>& args);

// Bytes written to storage by the children waited for so far (getrusage's ru_oublock).
long children_written_bytes();

// The ratios of bench_kl_kernel.cpp and bench_mid_size.cpp, from the medians of the run.
void print_kl_kernel_ratios(const std::map<std::string, double>& median);
void print_mid_size_ratios(const std::map<std::string, double>& median);
void print_pass_parts(const std::map<std::string, double>& by_name);
// What prefix reuse can reach on the components pair (bench_pass_parts.cpp), at every position
// or with --score-from half; 0 where its passes did not run.
double components_reach(const std::map<std::string, double>& by_name, bool half);
void print_server_ratios(const std::map<std::string, double>& by_name);
void print_generate_ratios(const std::map<std::string, double>& by_name);
void print_load_ratios(const std::map<std::string, double>& by_name);
void print_recommend_ratios(const std::map<std::string, double>& by_name);

}  // namespace hd::bench
