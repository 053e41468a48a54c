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
  double last_elapsed = 0, seconds = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);  // every line is JSON
    ASSERT_TRUE(j.contains("text")) << line;
    if (j["event"] == "chunk") {
      EXPECT_EQ(j["total"], 3) << line;
      EXPECT_TRUE(std::isfinite(j["mean_kl"].get<double>())) << line;
      done.push_back(j["done"].get<int>());
      // Elapsed grows; what is left is the mean of the chunks so far times those to go.
      const double elapsed = j["seconds_elapsed"].get<double>(), left = j["seconds_left"];
      EXPECT_GE(elapsed, last_elapsed) << line;
      last_elapsed = elapsed;
      seconds += j["seconds"].get<double>();
      const int to_go = 3 - j["done"].get<int>();
      EXPECT_DOUBLE_EQ(left, seconds / j["done"].get<int>() * to_go) << line;
      EXPECT_NE(j["text"].get<std::string>().find(" elapsed"), std::string::npos) << line;
      EXPECT_EQ(j["text"].get<std::string>().find(" left") == std::string::npos, to_go == 0)
          << line;
    } else {
      ++notes;
    }
  }
  EXPECT_EQ(done, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(notes, 2);  // what was run, and what was written
}

// One slow chunk moves the estimate by its share of the window, not all of it; a run that
// changes pace is followed within the window.
TEST(Progress, TimeLeftIsTheMeanOfTheLastChunks) {
  TimeLeft t;
  EXPECT_TRUE(std::isnan(t.per_unit()));
  for (int i = 0; i < TimeLeft::kWindow; ++i) t.unit_done(1.0);
  EXPECT_DOUBLE_EQ(t.left(10), 10.0);
  t.unit_done(9.0);  // one chunk 9 times as slow: the last-chunk estimate would say 90
  EXPECT_DOUBLE_EQ(t.left(10), 10.0 * (7 * 1.0 + 9.0) / 8);
  for (int i = 0; i < TimeLeft::kWindow; ++i) t.unit_done(2.0);
  EXPECT_DOUBLE_EQ(t.per_unit(), 2.0);
  EXPECT_EQ(duration_text(65), "1:05");
  EXPECT_EQ(duration_text(3725), "1:02:05");
  EXPECT_EQ(duration_text(NAN), "?");
}
