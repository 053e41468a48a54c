// What a user reads back: show --json, export, and the file itself from Python's standard
// library as docs/experiment-format.md describes it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/utf8.h"
#include "report/html.h"
#include "store/experiment.h"
#include "test_support.h"

using namespace hd;

namespace {

// A small finished diff, made once per process.
const std::string& experiment() {
  static std::string path = [] {
    const std::string dir = test::temp_dir("report");
    const std::string p = dir + "/run.hdy";
    const auto r =
        test::run_cli({"diff", "--a", test::shared_path("models/stories260K.gguf"), "--b-quant",
                       "Q8_0", "--text-file", test::shared_path("corpora/tom-sawyer.txt"),
                       "--chunk", "64", "--max-chunks", "3", "-o", p});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return p;
  }();
  return path;
}

std::vector<analysis::PositionRow> stored_diff_rows(const std::string& path) {
  std::vector<analysis::PositionRow> rows;
  for (const auto& c : store::Experiment::open(path, false).read_all()) {
    rows.insert(rows.end(), c.diff.positions.begin(), c.diff.positions.end());
  }
  return rows;
}

}  // namespace

TEST(Report, ShowJsonHasTheDocumentedKeys) {
  HD_REQUIRE_SHARED();
  const auto r = test::run_cli({"show", experiment(), "--json", "--worst", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"n_chunks", "n_scored", "kl_mean", "kl_ci95", "top1_change_rate", "ppl_a", "ppl_b",
        "floor_kl_mean", "floor_top1_change_rate", "layers", "worst", "provenance"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["n_chunks"], 3);
  EXPECT_EQ(j["n_scored"], 3 * 63);
  EXPECT_EQ(j["layers"].size(), 5u);
  EXPECT_TRUE(j["layers"][0].contains("rel_err_mean"));
  EXPECT_EQ(j["integrity"], "ok");
  // The mean is the plain mean of the stored scored KLs.
  double sum = 0;
  const auto rows = stored_diff_rows(experiment());
  for (const auto& p : rows) sum += p.score.kl;
  EXPECT_DOUBLE_EQ(j["kl_mean"].get<double>(), sum / static_cast<double>(rows.size()));
  // --worst: sorted by KL, the first is the largest stored.
  double max_kl = 0;
  for (const auto& p : rows) max_kl = std::max(max_kl, p.score.kl);
  EXPECT_EQ(j["worst"][0]["kl"].get<double>(), max_kl);
  EXPECT_GE(j["worst"][0]["kl"].get<double>(), j["worst"][1]["kl"].get<double>());
  EXPECT_EQ(j["worst"][0]["top5_a"].size(), 5u);
}

TEST(Report, ShowTableNamesTheFloorAndLayers) {
  HD_REQUIRE_SHARED();
  const auto r = test::run_cli({"show", experiment(), "--worst", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mean KL"), std::string::npos);
  // Both arms re-split by the same rule, and the few chunks flagged.
  // ... on two splits, chunks alternating, each named (issue 40: one split can be bitwise
  // where another is not).
  EXPECT_NE(r.out.find("A vs A′ (ub 33, 21)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("B vs B′ (ub 33, 21)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("floor: two splits, chunks alternating: A′ at ubatch 33, B′ at 33 (even "
                       "chunks, KL "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("A′ at ubatch 21, B′ at 21 (odd chunks, KL "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 chunks: intervals are wide"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("residual after each layer"), std::string::npos);
  EXPECT_NE(r.out.find("largest KL"), std::string::npos);
}

TEST(Report, CsvExportReadsBackToTheStoredNumbers) {
  HD_REQUIRE_SHARED();
  const std::string out = test::temp_dir("export") + "/p.csv";
  ASSERT_EQ(test::run_cli({"export", experiment(), "--positions", "--format", "csv", "-o", out})
                .exit_code,
            0);
  std::ifstream in(out);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header,
            "chunk,pos,token_id,token_text,scored,kl,nll_a,nll_b,top1_a,p_top1_a,top1_b,p_top1_b,"
            "top5_a,top5_b");
  const auto rows = stored_diff_rows(experiment());
  size_t n = 0;
  std::string line;
  while (std::getline(in, line)) {
    // A quoted field (token text with a comma or newline, the top-5 lists) may span lines.
    while (std::count(line.begin(), line.end(), '"') % 2 == 1 && in) {
      std::string more;
      std::getline(in, more);
      line += "\n" + more;
    }
    std::vector<std::string> f(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char ch = line[i];
      if (ch == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
        f.back() += '"', ++i;
      } else if (ch == '"') {
        quoted = !quoted;
      } else if (ch == ',' && !quoted) {
        f.emplace_back();
      } else {
        f.back() += ch;
      }
    }
    ASSERT_EQ(f.size(), 14u) << line;
    const auto& r = rows[n++];
    const auto top5 = nlohmann::json::parse(f[12]);
    ASSERT_EQ(top5.size(), 5u);
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(top5[k][0].get<int32_t>(), r.score.top_a.id[k]);
      EXPECT_EQ(top5[k][1].get<float>(), r.score.top_a.p[k]);  // the stored f32, bitwise
    }
    EXPECT_EQ(std::stoi(f[1]), r.pos);
    EXPECT_EQ(std::stoi(f[2]), r.target);
    EXPECT_EQ(std::strtod(f[5].c_str(), nullptr), r.score.kl)
        << line;  // bitwise, via shortest repr
    EXPECT_EQ(std::strtod(f[6].c_str(), nullptr), r.score.nll_a);
    EXPECT_EQ(std::strtof(f[9].c_str(), nullptr), r.score.top_a.p[0]);
  }
  EXPECT_EQ(n, rows.size());
}

TEST(Report, JsonlExportHasOneObjectPerPosition) {
  HD_REQUIRE_SHARED();
  const auto r = test::run_cli({"export", experiment(), "--positions", "--format", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::stringstream ss(r.out);
  size_t n = 0;
  for (std::string line; std::getline(ss, line); ++n) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("token_text") && j.contains("kl") && j.contains("p_top1_b"));
  }
  EXPECT_EQ(n, stored_diff_rows(experiment()).size());
}

TEST(Report, PythonStandardLibraryReadsTheFileAsDocumented) {
  HD_REQUIRE_SHARED();
  const std::string out = test::temp_dir("python") + "/read.json";
  const std::string cmd = "python3 " + std::string(HD_SOURCE_DIR) +
                          "/tests/python/read_experiment.py " + experiment() + " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["format"], "heterodyne-experiment");
  EXPECT_EQ(j["n_scored"], 3 * 63);
  // The integrity hash as the documentation defines it, computed without our code.
  EXPECT_EQ(j["integrity_recomputed"], j["integrity_stored"]);
  const auto show = nlohmann::json::parse(test::run_cli({"show", experiment(), "--json"}).out);
  EXPECT_NEAR(j["kl_mean"].get<double>(), show["kl_mean"].get<double>(), 1e-15);
}

// Byte tokens (half a character) are stored as BLOBs and exported as \xHH: Python's sqlite3 and
// csv read every table and every export.
TEST(Report, ByteTokensKeepEveryFormatValidUtf8) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("utf8");
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "Once upon a time the café was naïve — she smiled 🙂 and said “hello” to Zoë.\n";
  test::write_file(dir + "/u.txt", text);
  const std::string out = dir + "/u.hdy";
  ASSERT_EQ(test::run_cli({"diff", "--a", test::shared_path("models/stories260K.gguf"),
                           "--b-quant", "Q8_0", "-f", dir + "/u.txt", "--chunk", "64",
                           "--max-chunks", "4", "-o", out})
                .exit_code,
            0);
  EXPECT_NE(test::rows_text(out, "SELECT count(*) FROM vocab WHERE typeof(text) = 'blob'"), "0|\n")
      << "stories260K spells these characters with byte tokens";
  const std::string py = "python3 -c \"import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
                         "db.execute('SELECT * FROM vocab').fetchall()\" " + out;
  EXPECT_EQ(std::system(py.c_str()), 0) << py;
  for (const char* format : {"csv", "jsonl"}) {
    for (const char* table : {"positions", "flips"}) {
      const auto r = test::run_cli({"export", out, "--table", table, "--format", format});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_FALSE(first_invalid_utf8(r.out).has_value()) << table << " as " << format;
    }
  }
  const auto csv = test::run_cli({"export", out, "--table", "flips", "--format", "csv"}).out +
                   test::run_cli({"export", out, "--positions", "--format", "csv"}).out;
  EXPECT_NE(csv.find("\\x"), std::string::npos) << "a byte token's piece, escaped";
  EXPECT_EQ(test::run_cli({"verify", out}).exit_code, 0);

  // A file from before: the same pieces as TEXT. It still verifies (the same bytes).
  const std::string old = dir + "/old.hdy";
  std::filesystem::copy_file(out, old);
  test::sql(old, "UPDATE vocab SET text = CAST(text AS TEXT) WHERE typeof(text) = 'blob'");
  EXPECT_EQ(test::rows_text(old, "SELECT count(*) FROM vocab WHERE typeof(text) = 'blob'"), "0|\n");
  store::Experiment::open(old, true).seal();
  const auto v = test::run_cli({"verify", old});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

// The report's data stands inside a <script>: only "</" was rewritten, so "<!--<script>" in a
// file name, a model path or the text put the HTML parser where the real "</script>" no
// longer ends the element, and the page was blank. No '<', '>' or '&' reaches the parser; the
// script reads back the same value.
TEST(Report, EmbeddedDataHoldsNoMarkupWhateverItsStringsHold) {
  const std::vector<std::string> hostile = {
      "<!--<script>", "</script><script>window.__pwned=1</script>", "<!-- -->", "]]>",
      "<img src=x onerror=window.__pwned=1>", "a & b &amp; c", "\xe2\x80\xa8 \xe2\x80\xa9",
      "</SCRIPT >", "<\\/script>", "\\u003c"};
  nlohmann::json doc = {{"kind", "diff"}, {"nested", {{"list", hostile}}}};
  for (const auto& s : hostile) doc[s] = s;  // keys too
  const std::string data = report::script_data_json(doc);
  for (const char c : {'<', '>', '&'}) EXPECT_EQ(data.find(c), std::string::npos) << c;
  EXPECT_EQ(data.find("\xe2\x80\xa8"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(data), doc);
  const std::string html = report::standalone_html(doc);
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<script"), 2u) << "the boot script and the page's own";
  EXPECT_EQ(count("</script>"), 2u);
  EXPECT_EQ(count("<!--"), 0u);
}

// The page's own script stands in a <script> unescaped: it must hold none of what ends or nests
// one, in any case (the HTML parser matches "</ScRiPt" too).
TEST(Report, ThePagesOwnScriptHoldsNoMarkupThatWouldEndIt) {
  EXPECT_EQ(report::script_markup(report::app_js()), std::nullopt);
  EXPECT_EQ(report::script_markup("x = '</ScRiPt>'"), "</script");
  EXPECT_EQ(report::script_markup("// <!-- old"), "<!--");
  EXPECT_EQ(report::script_markup("s = '<sCript'"), "<script");
  EXPECT_EQ(report::script_markup("a < b && c > d"), std::nullopt);
}

// A position whose KL is +inf (B gives a token no probability that A gives some) is counted and
// named in show, --json and --worst, and the means are over the others (issue 40): here one
// stored KL made +inf by hand.
TEST(Report, AnInfiniteKlIsCountedAndNamedInEveryView) {
  HD_REQUIRE_SHARED();
  const std::string path = test::temp_dir("report-inf") + "/inf.hdy";
  std::filesystem::copy_file(experiment(), path, std::filesystem::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE positions SET kl = 9e999 WHERE comparison = 'diff' AND chunk = 1 "
                         "AND pos = 40",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const auto text = test::run_cli({"show", path, "--worst", "2"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("KL is +inf at 1 of 189 positions (first: chunk 1 position 40)"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("nan"), std::string::npos) << text.out;
  const auto r = test::run_cli({"show", path, "--json", "--worst", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kl_infinite_positions"], 1);
  EXPECT_EQ(j["first_kl_infinite"], (nlohmann::json{{"chunk", 1}, {"pos", 40}}));
  EXPECT_TRUE(j["infinite_note"].is_string());
  EXPECT_EQ(j["worst"][0]["kl"], "inf");
  // The mean is the plain mean of the other stored KLs.
  double sum = 0;
  size_t n = 0;
  for (const auto& c : store::Experiment::open(experiment(), false).read_all()) {
    for (const auto& p : c.diff.positions) {
      if (p.scored && !(c.chunk == 1 && p.pos == 40)) sum += p.score.kl, ++n;
    }
  }
  EXPECT_EQ(n, 188u);
  EXPECT_DOUBLE_EQ(j["kl_mean"].get<double>(), sum / static_cast<double>(n));
}
