// Peer agreement: our KL, PPL and same-top-1 rate match llama-perplexity --kl-divergence on its
// own positions (second half of each chunk), built from the same pinned llama.cpp tree.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <regex>

#include "engine/quantize.h"
#include "report/show.h"
#include "run/session.h"
#include "test_support.h"

using namespace hd;

namespace {

std::string run_shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

// llama.cpp's common log is written by a worker thread that the process does not wait for at
// exit (llama.cpp #22142), so on a loaded machine the peer's last lines, its totals, can be
// lost. Run it again until they are there (the pattern must be a line of the totals: the
// per-chunk table's header also says "Same top p").
std::string run_peer(const std::string& cmd, const std::string& last_line_pattern) {
  std::string out;
  for (int attempt = 0; attempt < 8; ++attempt) {
    out = run_shell(cmd);
    if (std::regex_search(out, std::regex(last_line_pattern))) break;
  }
  return out;
}

double grab(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) {
    ADD_FAILURE() << "pattern '" << pattern << "' not in peer output:\n"
                  << text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
    return NAN;
  }
  return std::stod(m[1]);
}

class Peer : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Peer, AgreesWithLlamaPerplexity) {
  HD_REQUIRE_SHARED();
  ASSERT_TRUE(std::filesystem::exists(HD_LLAMA_PERPLEXITY)) << "llama-perplexity was not built";
  const std::string type = GetParam();
  const std::string dir = test::temp_dir("peer-" + type);
  const std::string model = test::shared_path("models/stories260K.gguf");
  const std::string text = dir + "/ts60k.txt";
  test::write_file(
      text, run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 60000));
  const std::string quant = dir + "/q.gguf";
  engine::quantize_model(model, quant, type, 2);

  // One thread each: ctest runs two tests at once on two cores, where spin-waiting threads cost
  // far more than they give (this test took 277 s under it with -t 2).
  const std::string peer = std::string(HD_LLAMA_PERPLEXITY) + " -c 128 -b 128 -t 1 -f " + text;
  const std::string base = run_peer(
      peer + " -m " + model + " --kl-divergence-base " + dir + "/base.kld", "Final estimate");
  const std::string kld =
      run_peer(peer + " -m " + quant + " --kl-divergence-base " + dir + "/base.kld --kl-divergence",
               R"(Same top p:\s*[0-9])");
  const double peer_ppl_a = grab(base, R"(Final estimate: PPL = ([0-9.]+))");
  const double peer_ppl_b = grab(kld, R"(Mean PPL\(Q\)\s*:\s*([0-9.]+))");
  const double peer_kl = grab(kld, R"(Mean\s+KLD:\s*([0-9.]+))");
  const double peer_same = grab(kld, R"(Same top p:\s*([0-9.]+))") / 100.0;

  const auto r =
      test::run_cli({"diff", "--a", model, "--b", quant, "--text-file", text, "--chunk", "128",
                     "--score-from", "half", "-t", "1", "--no-floor", "-o", dir + "/run.hdy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto l = report::load_experiment(dir + "/run.hdy");
  const auto& s = l.summary.diff;
  EXPECT_EQ(l.summary.n_chunks,
            static_cast<size_t>(grab(kld, R"(computing over ([0-9]+) chunks)")));
  EXPECT_EQ(s.n_scored, l.summary.n_chunks * 63);  // positions 64..126 of every 128-token chunk
  EXPECT_NEAR(s.kl.mean, peer_kl, 2e-4) << type;
  EXPECT_NEAR(s.ppl_a / peer_ppl_a, 1.0, 1e-3) << s.ppl_a << " vs " << peer_ppl_a;
  EXPECT_NEAR(s.ppl_b / peer_ppl_b, 1.0, 1e-3) << s.ppl_b << " vs " << peer_ppl_b;
  EXPECT_NEAR(1.0 - s.top1_change.mean, peer_same, 0.005);
  std::printf(
      "[ peer %s ] KL ours %.6f peer %.6f | PPL A %.4f/%.4f B %.4f/%.4f | same top-1 %.4f/%.4f\n",
      type.c_str(), s.kl.mean, peer_kl, s.ppl_a, peer_ppl_a, s.ppl_b, peer_ppl_b,
      1.0 - s.top1_change.mean, peer_same);
}

INSTANTIATE_TEST_SUITE_P(Stories260K, Peer, ::testing::Values("Q8_0", "Q4_0"));
