// Progress is a struct (common/progress.h): the CLI prints its text, or with
// HETERODYNE_PROGRESS=json one JSON object per line, which serve reads from its children.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/progress.h"
#include "test_support.h"

using namespace hd;

TEST(Progress, JsonLineCarriesCountsAndLeavesOutWhatDoesNotApply) {
  Progress c = Progress::chunk(3, 8, "chunk 3/8  mean KL 0.001");
  c.mean_kl = 0.001;
  c.seconds = 1.5;
  const auto j = nlohmann::json::parse(progress_json(c));
  EXPECT_EQ(j["event"], "chunk");
  EXPECT_EQ(j["done"], 3);
  EXPECT_EQ(j["total"], 8);
  EXPECT_EQ(j["mean_kl"], 0.001);
  EXPECT_EQ(j["text"], "chunk 3/8  mean KL 0.001");
  EXPECT_FALSE(j.contains("seconds_left"));
  EXPECT_FALSE(j.contains("pass"));

  const auto note = nlohmann::json::parse(progress_json(Progress("chunk 9/9 is only text")));
  EXPECT_EQ(note["event"], "note");
  EXPECT_FALSE(note.contains("done"));  // a note's text is never counted
  // A token's text may be invalid UTF-8: the line still goes out, as valid JSON.
  const std::string bad = "piece \xff";
  EXPECT_NO_THROW(nlohmann::json::parse(progress_json(Progress(bad))));
}

TEST(Progress, DiffReportsEveryChunkAsJson) {
  HD_REQUIRE_SHARED();
  ::setenv("HETERODYNE_PROGRESS", "json", 1);
  const std::string dir = test::temp_dir("progress");
  const test::CliResult r =
      test::run_cli({"diff", "--a", test::shared_path("models/stories260K.gguf"), "--b-quant",
                     "Q8_0", "-f", test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                     "--max-chunks", "3", "--force", "-o", dir + "/run.hdy"});
  ::unsetenv("HETERODYNE_PROGRESS");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.err);
  std::string line;
  std::vector<int> done;
  int notes = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);  // every line is JSON
    ASSERT_TRUE(j.contains("text")) << line;
    if (j["event"] == "chunk") {
      EXPECT_EQ(j["total"], 3) << line;
      EXPECT_TRUE(std::isfinite(j["mean_kl"].get<double>())) << line;
      done.push_back(j["done"].get<int>());
    } else {
      ++notes;
    }
  }
  EXPECT_EQ(done, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(notes, 2);  // what was run, and what was written
}
