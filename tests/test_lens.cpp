// The logit lens (analysis/lens.h) against known answers: at the last layer it is each arm's own
// logits, bit for bit (the run checks it on every chunk; the stored rows say so too); with
// identical arms every cross-arm figure is exactly 0 at every layer; earlier layers read
// something else than the final logits; the rows verify and show --lens prints them alone.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "store/experiment.h"
#include "test_support.h"

using namespace hd;

namespace {

// Columns of analysis_lens after the chunk: layer, pos, kl_a, kl_b, kl_ab, top1_a, top1_b,
// agree_a, agree_b.
double real(const analysis::Cell& c) { return analysis::cell_real(c); }
int64_t integer(const analysis::Cell& c) { return std::get<int64_t>(c); }

std::string lens_run(const std::string& name, const std::string& b_flag, const std::string& b) {
  const std::string out = test::temp_dir("lens-" + name) + "/run.hdy";
  const auto r = test::run_cli({"diff", "--a", test::shared_path("models/stories260K.gguf"),
                                b_flag, b, "-f", test::shared_path("corpora/tom-sawyer.txt"),
                                "--chunk", "64", "--max-chunks", "2", "-t", "2", "--lens", "-o",
                                out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

}  // namespace

TEST(Lens, IdenticalArmsAgreeExactlyAtEveryLayer) {
  HD_REQUIRE_SHARED();
  const std::string out = lens_run("same", "--b", test::shared_path("models/stories260K.gguf"));
  const auto e = store::Experiment::open(out, false);
  const auto rows = e.analysis_rows("lens");
  ASSERT_FALSE(rows.empty());
  std::set<int64_t> layers;
  for (const auto& r : rows) {
    const auto& c = r.cells;
    layers.insert(integer(c[0]));
    EXPECT_EQ(real(c[4]), 0.0) << "layer " << integer(c[0]) << " pos " << integer(c[1]);
    EXPECT_EQ(real(c[2]), real(c[3]));
    EXPECT_EQ(integer(c[5]), integer(c[6]));
  }
  EXPECT_EQ(layers.size(), 5u);  // stories260K has 5 layers
}

TEST(Lens, TheLastLayerIsTheArmsOwnLogitsAndEarlierLayersAreNot) {
  HD_REQUIRE_SHARED();
  const std::string out = lens_run("q8", "--b-quant", "Q8_0");
  const auto e = store::Experiment::open(out, false);
  const auto rows = e.analysis_rows("lens");
  std::map<std::pair<int, int64_t>, double> diff_kl;  // (chunk, pos) -> KL(A || B)
  for (int c : e.finished_chunks()) {
    for (const auto& p : e.read_chunk(c).diff.positions)
      if (p.scored) diff_kl[{c, p.pos}] = p.score.kl;
  }
  size_t last = 0, earlier_apart = 0, earlier = 0;
  for (const auto& r : rows) {
    const auto& c = r.cells;
    if (integer(c[0]) == 4) {
      ++last;
      EXPECT_EQ(real(c[2]), 0.0);
      EXPECT_EQ(real(c[3]), 0.0);
      EXPECT_EQ(integer(c[7]), 1);
      EXPECT_EQ(integer(c[8]), 1);
      // Across arms, the last lens is the diff itself, bit for bit.
      EXPECT_EQ(real(c[4]), diff_kl.at({r.chunk, integer(c[1])}));
    } else {
      ++earlier;
      earlier_apart += real(c[2]) > 0 ? 1 : 0;
    }
  }
  EXPECT_EQ(last, diff_kl.size());
  EXPECT_EQ(earlier, 4 * diff_kl.size());
  EXPECT_EQ(earlier_apart, earlier) << "a layer's lens that equals the final logits reads nothing";

  EXPECT_EQ(test::run_cli({"verify", out}).exit_code, 0);
  // export carries the lens rows: one JSON object per stored row, with the chunk.
  const auto exported = test::run_cli({"export", out, "--table", "lens", "--format", "jsonl"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  size_t lines = 0;
  for (size_t at = 0; (at = exported.out.find('\n', at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, rows.size());
  EXPECT_NE(exported.out.find("\"kl_ab\":"), std::string::npos);
  const auto shown = test::run_cli({"show", out, "--lens"});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("logit lens"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("lock layer"), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("mean KL"), std::string::npos) << "--lens prints the lens alone";
}

TEST(Lens, ShowLensOfARunWithoutItIsOneLine) {
  HD_REQUIRE_SHARED();
  const std::string out = test::temp_dir("lens-none") + "/run.hdy";
  ASSERT_EQ(test::run_cli({"diff", "--a", test::shared_path("models/stories260K.gguf"),
                           "--b-quant", "Q8_0", "-f", test::shared_path("corpora/tom-sawyer.txt"),
                           "--chunk", "64", "--max-chunks", "1", "-o", out})
                .exit_code,
            0);
  test::expect_refused({"show", out, "--lens"}, "has no lens rows: run diff with --lens");
}
