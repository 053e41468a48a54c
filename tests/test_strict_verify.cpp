// verify and the caches are as strict as the docs promise (issue 15, class 5): every stored
// column is compared on re-run, --resume checks what is already there before it adds to it,
// a cached quantized model is trusted only when it hashes as recorded, and a statistic that is
// not finite is refused instead of stored.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/quantize.h"
#include "ggml.h"
#include "gguf.h"
#include "store/experiment.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::read_file;
using hd::test::run_cli;
using hd::test::shared_path;

using hd::test::sql;

namespace {

std::string dir() {
  static const std::string d = hd::test::temp_dir("strict");
  return d;
}

std::string model() { return shared_path("models/stories260K.gguf"); }

// One chunk with floor and transplants (each verify recomputes it), or two without (to resume).
std::string make_experiment(const std::string& name, bool transplants) {
  return hd::test::make_experiment(dir() + "/" + name, transplants
                                                           ? std::vector<std::string>{"--max-chunks", "1", "--transplants"}
                                                           : std::vector<std::string>{});
}
const std::string& experiment() {
  static const std::string p = make_experiment("real.hdy", true);
  return p;
}
const std::string& two_chunks() {
  static const std::string p = make_experiment("two.hdy", false);
  return p;
}

// The documented way to seal a file again: the hash of the canonical serialization.
void reseal(const std::string& path) {
  hd::store::Experiment e = hd::store::Experiment::open(path, true);
  e.set_meta("integrity_sha256", e.compute_integrity());
}

std::string copy_of(const std::string& name, const std::string& from = experiment()) {
  const std::string p = dir() + "/" + name;
  fs::copy_file(from, p, fs::copy_options::overwrite_existing);
  return p;
}

}  // namespace

TEST(StrictVerify, EveryStoredColumnIsComparedEvenWhenTheHashIsResealed) {
  HD_REQUIRE_SHARED();
  ASSERT_FALSE(experiment().empty());
  const CliResult clean = run_cli({"verify", copy_of("clean.hdy")});
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  const std::string at = "chunk = 0 AND pos = 40 AND comparison = 'diff'";
  const std::vector<std::string> edits = {
      "UPDATE positions SET top1_a = top1_a + 1 WHERE " + at,
      "UPDATE positions SET p_top1_a = p_top1_a / 2 WHERE " + at,
      "UPDATE positions SET top1_b = top1_b + 1 WHERE " + at,
      "UPDATE positions SET p_top1_b = 0.25 WHERE " + at,
      "UPDATE positions SET target_id = target_id + 1 WHERE " + at,
      "UPDATE positions SET scored = 1 - scored WHERE " + at,
      "UPDATE positions SET p_top1_a = 0.5 WHERE chunk = 0 AND pos = 60 AND comparison = 'floor'",
      "UPDATE vocab SET text = 'edited' WHERE token_id = "
      "(SELECT token_id FROM tokens WHERE chunk = 0 AND pos = 10)",
      "UPDATE transplants SET point = 'l_out-9' WHERE step = 2",
      "UPDATE transplants SET kl = kl * (1 + 1e-12) WHERE chunk = 0 AND step = 1 AND pos = 40 AND "
      "direction = 'noise'",
      "UPDATE layers SET cosine = 0.5 WHERE chunk = 0 AND layer = 1 AND pos = 33 AND "
      "comparison = 'diff'",
      "UPDATE chunks SET n_tokens = 63 WHERE chunk = 0",
  };
  int n = 0;
  for (const auto& edit : edits) {
    const std::string p = copy_of("edit" + std::to_string(n++) + ".hdy");
    sql(p, edit);
    reseal(p);
    ASSERT_EQ(run_cli({"verify", p, "--integrity-only"}).exit_code, 0) << "not resealed: " << edit;
    const CliResult r = run_cli({"verify", p});
    EXPECT_NE(r.exit_code, 0) << edit << "\n" << r.err;
    EXPECT_EQ(r.out.find("reproduce bitwise"), std::string::npos) << edit << "\n" << r.err;
    EXPECT_TRUE(r.err.find("verify failed") != std::string::npos ||
                r.err.find("is damaged") != std::string::npos)
        << edit << "\n" << r.err;
  }
}

// A file scored by other KL loops (one from before the vector kernel has no kl_kernel in its
// provenance) cannot reproduce bitwise: verify says why before it computes anything.
TEST(StrictVerify, AFileScoredByOtherKlLoopsIsRefusedUnlessForced) {
  HD_REQUIRE_SHARED();
  ASSERT_FALSE(experiment().empty());
  const std::string p = copy_of("old-kl.hdy");
  sql(p, "UPDATE meta SET value = json_remove(value, '$.heterodyne.kl_kernel') "
         "WHERE key = 'provenance'");
  reseal(p);
  const CliResult r = run_cli({"verify", p});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("KLs were computed by heterodyne's 'f64 std::exp, one running sum' loops"),
            std::string::npos)
      << r.err;
  const CliResult forced = run_cli({"verify", p, "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;  // these rows were in fact scored by this build
}

TEST(StrictResume, ChunksEditedSinceTheyWereStoredAreNotSealed) {
  HD_REQUIRE_SHARED();
  ASSERT_FALSE(two_chunks().empty());
  // Chunk 1 removed, the seal broken: a file a killed run could have left.
  const std::string unfinished =
      "DELETE FROM meta WHERE key IN ('integrity_sha256', 'chunk_sha256/1');"
      "UPDATE meta SET value = 'running' WHERE key = 'status';"
      "DELETE FROM chunks WHERE chunk = 1; DELETE FROM tokens WHERE chunk = 1;"
      "DELETE FROM positions WHERE chunk = 1; DELETE FROM layers WHERE chunk = 1;"
      "DELETE FROM transplants WHERE chunk = 1;";
  const std::string good = copy_of("resume-good.hdy", two_chunks());
  sql(good, unfinished);
  const CliResult ok = run_cli({"diff", "--resume", good});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(run_cli({"verify", good}).exit_code, 0);
  for (const std::string edit :
       {"UPDATE positions SET kl = kl * 2 WHERE chunk = 0 AND pos = 40",
        "UPDATE vocab SET text = 'edited' WHERE token_id = "
        "(SELECT token_id FROM tokens WHERE chunk = 0 AND pos = 10)",
        "UPDATE meta SET value = replace(value, '\"chunk\":64', '\"chunk\":32') WHERE key = 'config'",
        "UPDATE chunks SET seconds = 99 WHERE chunk = 0",
        "DELETE FROM meta WHERE key = 'chunk_sha256/0'"}) {
    const std::string p = copy_of("resume-edited.hdy", two_chunks());
    sql(p, unfinished);
    sql(p, edit);
    const CliResult r = run_cli({"diff", "--resume", p});
    EXPECT_EQ(r.exit_code, 2) << edit << "\n" << r.err;
    EXPECT_NE(r.err.find("chunk 0"), std::string::npos) << edit << "\n" << r.err;
    EXPECT_NE(r.err.find("cannot be resumed"), std::string::npos) << r.err;
    hd::store::Experiment e = hd::store::Experiment::open(p, false);
    EXPECT_FALSE(e.meta("integrity_sha256").has_value()) << "an edited file was sealed: " << edit;
    EXPECT_EQ(e.finished_chunks().size(), 1u);
  }
}

// Nor does resume add this build's rows to a file another build's KL loops began.
TEST(StrictResume, AFileBegunByOtherKlLoopsIsNotResumed) {
  HD_REQUIRE_SHARED();
  ASSERT_FALSE(two_chunks().empty());
  const std::string p = copy_of("resume-old-kl.hdy", two_chunks());
  sql(p, "DELETE FROM meta WHERE key IN ('integrity_sha256', 'chunk_sha256/1');"
         "UPDATE meta SET value = 'running' WHERE key = 'status';"
         "DELETE FROM chunks WHERE chunk = 1; DELETE FROM tokens WHERE chunk = 1;"
         "DELETE FROM positions WHERE chunk = 1; DELETE FROM layers WHERE chunk = 1;"
         "DELETE FROM transplants WHERE chunk = 1;"
         "UPDATE meta SET value = json_remove(value, '$.heterodyne.kl_kernel') "
         "WHERE key = 'provenance'");
  const CliResult r = run_cli({"diff", "--resume", p});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("they differ in the last bits: cannot resume"), std::string::npos) << r.err;
  EXPECT_EQ(hd::store::Experiment::open(p, false).finished_chunks().size(), 1u);
}

TEST(QuantCache, AWrongOrTruncatedFileInItsSlotIsMadeAgain) {
  HD_REQUIRE_SHARED();
  hd::test::ScopedCacheDir cache(dir() + "/cache");
  const std::string m = model();
  const std::string slot = hd::engine::ensure_quantized(m, "Q8_0", 2);
  const std::string q8 = read_file(slot);
  ASSERT_FALSE(q8.empty());
  const std::string text = shared_path("corpora/tom-sawyer.txt");
  const auto kl_of = [&](const std::string& out) {
    const CliResult r = run_cli({"diff", "--a", m, "--b-quant", "Q8_0", "-f", text, "--chunk", "64",
                                 "--max-chunks", "2", "--no-floor", "-o", out, "--force"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(run_cli({"show", out, "--json"}).out).at("kl_mean").get<double>();
  };
  const double truth = kl_of(dir() + "/q8-true.hdy");
  // Another type's file in the Q8_0 slot, then a file cut in half: each is made again.
  hd::engine::quantize_model(m, slot, "Q4_0", 2, false, hd::OutputPolicy(true));
  ASSERT_NE(read_file(slot), q8);
  EXPECT_EQ(kl_of(dir() + "/q8-swapped.hdy"), truth);
  EXPECT_EQ(read_file(slot), q8);
  fs::resize_file(slot, q8.size() / 2);
  EXPECT_EQ(hd::engine::ensure_quantized(m, "Q8_0", 2), slot);
  EXPECT_EQ(read_file(slot), q8);
  // verify of a run made before the swap still finds its own Q8_0.
  hd::engine::quantize_model(m, slot, "Q4_0", 2, false, hd::OutputPolicy(true));
  const CliResult v = run_cli({"verify", dir() + "/q8-true.hdy"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

// A model whose token embeddings are all zero: arm A's residual is zero after every layer, so
// B's relative error against it is undefined. It is refused as a non-finite logit is.
TEST(NonFinite, AnUndefinedResidualErrorIsRefusedNotStored) {
  const std::string seed = std::string(HD_SOURCE_DIR) + "/fuzz/corpus/gguf/seed-llama.gguf";
  const std::string zero = dir() + "/zero-embd.gguf";
  // BOS's embedding row zeroed: every chunk's position 0 has a zero residual in A (RMS norm of
  // zero is zero, and llama has no biases), while the other tokens still move the logits, so the
  // survey proves the residual points and the comparison meets the zero.
  hd::test::rewrite_gguf(seed, zero, [](gguf_context* meta, ggml_context* data) {
    ggml_tensor* embd = ggml_get_tensor(data, "token_embd.weight");
    ASSERT_NE(embd, nullptr);
    const int64_t key = gguf_find_key(meta, "tokenizer.ggml.bos_token_id");
    ASSERT_GE(key, 0);
    const size_t row = ggml_row_size(embd->type, embd->ne[0]);
    std::memset(static_cast<char*>(embd->data) + gguf_get_val_u32(meta, key) * row, 0, row);
  });
  std::string text;
  for (int i = 0; i < 8; ++i) text += "Once upon a time there was a little model.\n";
  hd::test::write_file(dir() + "/t.txt", text);
  // With the floor too, whose arms split in A's and B's contexts and whose comparisons run
  // first (A's zero rows against A′'s identical ones are no error: the relative error of equal
  // rows is 0), and the message names both models.
  for (const bool floor : {false, true}) {
    const std::string out = dir() + (floor ? "/zero-floor.hdy" : "/zero.hdy");
    std::vector<std::string> args = {"diff", "--a", zero, "--b", seed, "-f", dir() + "/t.txt",
                                     "--chunk", "16", "-o", out};
    if (!floor) args.push_back("--no-floor");
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("non-finite relative error"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(zero), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("heterodyne: error: "), r.err.rfind("heterodyne: error: ")) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
}
