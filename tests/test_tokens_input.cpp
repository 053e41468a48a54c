// --tokens FILE (issue 17, part 3): token ids as the input of every command that reads a text.
// The ids stand where the text's tokens would, so the same ids as a text's tokens give the same
// diff; a bad file is one line and exit 2; the file is recorded and checked again as a text is
// (verify, --resume); a model without a vocabulary (llama.cpp's no_vocab fixtures) runs on ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "engine/model.h"
#include "run/text.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::expect_refused;
using hd::test::read_file;
using hd::test::rows_text;
using hd::test::run_cli;
using hd::test::shared_path;
using hd::test::write_file;

namespace {

const std::string& dir() {
  static const std::string d = hd::test::temp_dir("tokens-input");
  return d;
}

std::string s260k() { return shared_path("models/stories260K.gguf"); }

// The first 20000 bytes of Tom Sawyer, and its first 128 tokens (two chunks of 64) as stories260K
// tokenizes them, written as whitespace-separated ids (ids.txt) and as a JSON array (ids.json).
struct Inputs {
  std::string text, ids_txt, ids_json;
  std::vector<int32_t> ids;
};
const Inputs& inputs() {
  static const Inputs in = [] {
    Inputs x;
    x.text = dir() + "/tom.txt";
    write_file(x.text, read_file(shared_path("corpora/tom-sawyer.txt")).substr(0, 20000));
    const auto model = hd::engine::model_load(s260k());
    x.ids = hd::run::tokenize_text(*model, read_file(x.text), 128);
    std::string spaced;
    for (int32_t id : x.ids) spaced += std::to_string(id) + (spaced.size() % 7 ? " " : "\n");
    x.ids_txt = dir() + "/ids.txt";
    write_file(x.ids_txt, spaced);
    x.ids_json = dir() + "/ids.json";
    write_file(x.ids_json, nlohmann::json(x.ids).dump());
    return x;
  }();
  return in;
}

std::vector<std::string> diff_args(const std::string& flag, const std::string& input,
                                   const std::string& out, const std::string& b_quant = "") {
  std::vector<std::string> args = {"diff", "--a", s260k()};
  if (b_quant.empty()) {
    args.insert(args.end(), {"--b", s260k()});
  } else {
    args.insert(args.end(), {"--b-quant", b_quant});
  }
  args.insert(args.end(), {flag, input, "--chunk", "64", "--max-chunks", "2", "-o", out});
  return args;
}

nlohmann::json meta_json(const std::string& path, const std::string& key) {
  const std::string v = rows_text(path, "SELECT value FROM meta WHERE key = '" + key + "'");
  return nlohmann::json::parse(v.substr(0, v.rfind('|')));
}

// Every stored number and token of a diff, bit for bit (rows_text); not the per-chunk hashes,
// which hash the run time and the configuration (its input path) too.
std::string chunk_rows(const std::string& path) {
  std::string all;
  for (const char* q :
       {"SELECT * FROM tokens ORDER BY 1, 2", "SELECT * FROM positions ORDER BY 1, 2, 3",
        "SELECT * FROM layers ORDER BY 1, 2, 3, 4", "SELECT * FROM vocab ORDER BY 1",
        "SELECT chunk, n_tokens FROM chunks ORDER BY 1"}) {
    all += std::string(q) + "\n" + rows_text(path, q);
  }
  return all;
}

// A copy of a two-chunk diff as a run killed after its first chunk leaves it.
void unfinish(const std::string& path) {
  hd::test::sql(path,
                "DELETE FROM meta WHERE key IN ('integrity_sha256', 'chunk_sha256/1');"
                "UPDATE meta SET value = 'running' WHERE key = 'status';"
                "DELETE FROM chunks WHERE chunk = 1; DELETE FROM tokens WHERE chunk = 1;"
                "DELETE FROM positions WHERE chunk = 1; DELETE FROM layers WHERE chunk = 1;");
}

// verify's refusals: exit 2 and one error line on stderr; the integrity check's verdict on
// stdout before it.
void expect_verify_refused(const std::vector<std::string>& args, const std::string& phrase) {
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out.rfind("integrity: ok", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("heterodyne: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << r.err;
}

}  // namespace

TEST(TokensInput, IdenticalArmsGiveExactlyZeroKl) {
  HD_REQUIRE_SHARED();
  const std::string out = dir() + "/same.hdy";
  const CliResult r = run_cli(diff_args("--tokens", inputs().ids_txt, out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rows_text(out,
                      "SELECT count(*), sum(kl != 0), sum(nll_a != nll_b) FROM positions "
                      "WHERE comparison = 'diff'"),
            "126|0|0|\n");  // 2 chunks of 63 predicted positions, every one exactly 0
  EXPECT_EQ(rows_text(out, "SELECT sum(max_abs != 0) FROM layers WHERE comparison = 'diff'"),
            "0|\n");
}

TEST(TokensInput, TheTextsTokensAsIdsGiveTheSameDiff) {
  HD_REQUIRE_SHARED();
  const Inputs& in = inputs();
  const std::string text = dir() + "/from-text.hdy", spaced = dir() + "/from-ids.hdy",
                    json = dir() + "/from-json.hdy";
  for (const auto& [flag, input, out] :
       std::vector<std::array<std::string, 3>>{{"-f", in.text, text},
                                               {"--tokens", in.ids_txt, spaced},
                                               {"--tokens", in.ids_json, json}}) {
    const CliResult r = run_cli(diff_args(flag, input, out, "Q8_0"));
    ASSERT_EQ(r.exit_code, 0) << flag << " " << input << "\n" << r.err;
  }
  // Not trivially equal: B is Q8_0, so the numbers are not all zero.
  EXPECT_NE(rows_text(text, "SELECT sum(kl > 0) FROM positions WHERE comparison = 'diff'"), "0|\n");
  EXPECT_EQ(chunk_rows(spaced), chunk_rows(text));
  EXPECT_EQ(chunk_rows(json), chunk_rows(text));
  // The input is recorded as a text is (path and sha256), marked as ids; the tokens alike.
  const auto prov_text = meta_json(text, "provenance"), prov_ids = meta_json(spaced, "provenance");
  EXPECT_EQ(prov_ids["tokens"], prov_text["tokens"]);
  EXPECT_EQ(prov_ids["text"]["path"], in.ids_txt);
  EXPECT_EQ(prov_ids["text"]["sha256"], hd::sha256_bytes(read_file(in.ids_txt)));
  EXPECT_EQ(prov_ids["text"]["token_ids"], true);
  EXPECT_FALSE(prov_text["text"].contains("token_ids"));  // a text run's file is as before
  EXPECT_EQ(meta_json(spaced, "config")["token_ids"], true);
  EXPECT_FALSE(meta_json(text, "config").contains("token_ids"));
}

TEST(TokensInput, EachBadFileIsOneLineAndExit2) {
  HD_REQUIRE_SHARED();
  const std::string out = dir() + "/never.hdy";
  struct Case {
    std::string name, bytes, phrase;
  };
  const std::vector<Case> cases = {
      {"float.txt", "1 410 3.5 7", "entry 2 (byte 6) is '3.5', a float, not an integer token id"},
      {"word.txt", "1 410 the 7", "entry 2 (byte 6) is 'the', not an integer token id"},
      {"negative.txt", "1 -4 7", "entry 1 (byte 2) is '-4', negative"},
      {"overflow.txt", "1 4294967296", "entry 1 (byte 2) is '4294967296', past any token id"},
      {"range.txt", "1 410 512 7", "entry 2 is id 512, outside this model's vocabulary of 512"},
      {"empty.txt", "", "is empty"},
      {"blank.txt", " \n \n", "holds no token ids"},
      {"empty.json", "[]", "holds no token ids"},
      {"object.json", "{\"ids\": [1, 2]}", "entry 0 (byte 0) is '{\"ids\":', not an integer"},
      {"strings.json", "[\"1\", \"2\"]", "entry 0 (byte 1) is '\"1\"', not an integer"},
      {"floats.json", "[1, 2.5]", "entry 1 (byte 4) is '2.5', a float"},
      {"open.json", "[1, 2", "the JSON array opened at byte 0 is not closed"},
      {"after.json", "[1, 2] 3", "byte 7 is '3', after the JSON array's end"},
  };
  for (const Case& c : cases) {
    const std::string path = dir() + "/" + c.name;
    write_file(path, c.bytes);
    expect_refused(diff_args("--tokens", path, out), "tokens file '" + path + "'");
    expect_refused(diff_args("--tokens", path, out), c.phrase);
  }
  // Every command that takes --text-file takes --tokens, and refuses a bad one the same way.
  const std::string bad = dir() + "/range.txt", m = s260k();
  const std::string phrase = "entry 2 is id 512, outside this model's vocabulary";
  expect_refused({"sweep", "--a", m, "--b-ub", "7", "--tokens", bad, "-o", out}, phrase);
  expect_refused({"floor", "-m", m, "--tokens", bad, "--ub", "1..2", "-o", out}, phrase);
  expect_refused({"capture", "-m", m, "--tokens", bad, "-o", dir() + "/never-ref"}, phrase);
  expect_refused({"length-curve", "--a", m, "--b-ub", "7", "--tokens", bad, "--lengths", "4"},
                 phrase);
  // One of the two flags, exactly.
  const std::string ids = inputs().ids_txt, text = inputs().text;
  expect_refused({"diff", "--a", m, "--b", m, "-f", text, "--tokens", ids, "-o", out},
                 "diff takes one of --text-file FILE or --tokens FILE, not both");
  expect_refused({"diff", "--a", m, "--b", m, "-o", out},
                 "diff needs --text-file FILE or --tokens FILE");
  expect_refused({"capture", "-m", m, "-o", dir() + "/never-ref"},
                 "capture needs --text-file FILE or --tokens FILE");
  expect_refused({"length-curve", "--a", m, "--b-ub", "7", "--lengths", "4"},
                 "length-curve needs --text-file FILE or --tokens FILE");
  expect_refused({"floor", "-m", m, "-f", text, "--tokens", ids, "-o", out}, "not both");
  expect_refused({"diff", "--a", m, "--b", m, "--tokens", ids, "--skip-unencodable", "-o", out},
                 "--tokens gives ids, with nothing to drop");
  // A file's rules are a text's: regular, not a device; fewer ids than a chunk is a text's line.
  expect_refused(diff_args("--tokens", "/dev/zero", out),
                 "tokens file '/dev/zero' is a character device, not a regular file");
  expect_refused(diff_args("--tokens", dir(), out), "is a directory");
  expect_refused(diff_args("--tokens", dir() + "/missing.txt", out), "cannot read tokens file");
  write_file(dir() + "/short.txt", "1 2 3");
  expect_refused(diff_args("--tokens", dir() + "/short.txt", out),
                 "has 3 tokens, fewer than one chunk of 64");
  EXPECT_FALSE(fs::exists(out));
}

TEST(TokensInput, VerifyAndResumeCheckTheTokensFile) {
  HD_REQUIRE_SHARED();
  const std::string ids = dir() + "/verify-ids.txt";
  fs::copy_file(inputs().ids_txt, ids, fs::copy_options::overwrite_existing);
  const std::string run = dir() + "/verify.hdy";
  ASSERT_EQ(run_cli(diff_args("--tokens", ids, run, "Q8_0")).exit_code, 0);
  const CliResult plain = run_cli({"verify", run});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  const CliResult again = run_cli({"verify", run, "--tokens", ids});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("tokens: the ids this run read (sha256 matches)"), std::string::npos)
      << again.err;
  // Another file, or the text where ids were read: one line, exit 2.
  const std::string changed = dir() + "/verify-changed.txt";
  write_file(changed, read_file(ids) + "7\n");
  expect_verify_refused(
      {"verify", run, "--tokens", changed},
      "the token ids given with --tokens " + changed + " are not the ones this run read");
  expect_verify_refused({"verify", run, "-f", inputs().text},
                        "this run read token ids: give them again with --tokens FILE, not -f");
  expect_refused({"verify", run, "-f", ids, "--tokens", ids}, "not both");

  // A run killed after its first chunk resumes only with the ids it read.
  const std::string cut = dir() + "/verify-cut.hdy";
  fs::copy_file(run, cut, fs::copy_options::overwrite_existing);
  unfinish(cut);
  const std::string kept = read_file(ids);
  write_file(ids, kept + "7\n");
  expect_refused({"diff", "--resume", cut},
                 "the tokens file '" + ids +
                     "' has changed since this run started (give the ids "
                     "it read with heterodyne diff --resume " +
                     cut + " --tokens FILE)");
  expect_refused({"diff", "--resume", cut, "-f", inputs().text}, "this run read token ids");
  write_file(ids, kept);
  const CliResult resumed = run_cli({"diff", "--resume", cut});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(chunk_rows(cut), chunk_rows(run));
  EXPECT_EQ(run_cli({"verify", cut}).exit_code, 0);
  // A floor's verify reads its input again, from where it was: a changed file fails it.
  const std::string floor_file = dir() + "/verify-floor.hdy";
  const CliResult floor = run_cli({"floor", "-m", s260k(), "--tokens", ids, "--chunk", "64",
                                   "--max-chunks", "1", "--ub", "1..2", "-o", floor_file});
  ASSERT_EQ(floor.exit_code, 0) << floor.err;
  EXPECT_EQ(run_cli({"verify", floor_file}).exit_code, 0);
  write_file(ids, kept + "7\n");
  expect_verify_refused({"verify", floor_file},
                        "the tokens file '" + ids + "' has changed since this run started");
  write_file(ids, kept);
  // A text run refuses ids given again.
  const std::string text_run = hd::test::make_experiment(dir() + "/text-run.hdy");
  expect_verify_refused({"verify", text_run, "--tokens", ids},
                        "this run read a text: give it again with -f FILE, not --tokens");
}

TEST(TokensInput, StandardInputIsReadAndAskedForAgain) {
  HD_REQUIRE_SHARED();
  const std::string run = dir() + "/stdin.hdy";
  const CliResult r =
      hd::test::run_cli_with_input(diff_args("--tokens", "-", run), inputs().ids_json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(meta_json(run, "provenance")["text"]["path"], "-");
  // A diff's verify needs no input; a sweep's or floor's does, and a resume: asked for by flag.
  const std::string cut = dir() + "/stdin-cut.hdy";
  fs::copy_file(run, cut, fs::copy_options::overwrite_existing);
  unfinish(cut);
  expect_refused({"diff", "--resume", cut},
                 "this run read its token ids from standard input: give them again, heterodyne "
                 "diff --resume " +
                     cut +
                     " --tokens FILE (or --tokens - with the ids on "
                     "standard input)");
  const CliResult resumed =
      hd::test::run_cli_with_input({"diff", "--resume", cut, "--tokens", "-"}, inputs().ids_json);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(chunk_rows(cut), chunk_rows(run));
  const std::string empty = dir() + "/empty-stdin.txt";
  write_file(empty, "");
  hd::test::expect_refusal(
      hd::test::run_cli_with_input(diff_args("--tokens", "-", dir() + "/never.hdy"), empty), 2,
      "standard input (--tokens -) is empty", "--tokens - from an empty file");
}

// llama.cpp's fixtures have ids but no texts: a text is one line; ids run every command, and
// what shows a token shows its id.
TEST(TokensInput, ModelsWithoutAVocabularyReadTokenIds) {
  HD_REQUIRE_SHARED();
  const std::string m = dir() + "/llama-fixture.gguf";
  const CliResult made = run_cli({"make-model", "--arch", "llama", "-o", m, "--force"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string spaced;
  for (int i = 0; i < 96; ++i) spaced += std::to_string((i * 37 + 11) % 128) + " ";
  const std::string ids = dir() + "/fixture-ids.txt";
  write_file(ids, spaced);
  const std::string out = dir() + "/fixture.hdy";
  expect_refused({"diff", "--a", m, "--b", m, "-f", inputs().text, "-o", out},
                 "has no vocabulary (tokenizer no_vocab): it cannot read a text; give its input "
                 "as token ids, --tokens FILE");
  write_file(dir() + "/fixture-range.txt", "1 2 128");
  expect_refused({"diff", "--a", m, "--b", m, "--tokens", dir() + "/fixture-range.txt", "--chunk",
                  "2", "-o", out},
                 "entry 2 is id 128, outside this model's vocabulary of 128 (ids 0 to 127)");

  const CliResult r = run_cli(
      {"diff", "--a", m, "--b", m, "--tokens", ids, "--chunk", "32", "--transplants", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No BOS to put first: every id is read as given.
  EXPECT_EQ(rows_text(out, "SELECT token_id FROM tokens WHERE chunk = 1 AND pos = 0"),
            "43|\n");  // (32 * 37 + 11) % 128
  EXPECT_EQ(rows_text(out,
                      "SELECT count(*), sum(kl != 0) FROM positions WHERE comparison = "
                      "'diff'"),
            "93|0|\n");
  EXPECT_EQ(rows_text(out, "SELECT count(*) FROM vocab"), "0|\n");  // ids have no texts
  const CliResult shown = run_cli({"show", out, "--worst", "2"});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_TRUE(std::regex_search(shown.out, std::regex("\\[<[0-9]+>\\]"))) << shown.out;
  EXPECT_EQ(run_cli({"export", out, "-o", dir() + "/fixture.csv", "--force"}).exit_code, 0);
  EXPECT_EQ(run_cli({"verify", out}).exit_code, 0);

  const std::string ref = dir() + "/fixture-ref";
  const CliResult cap =
      run_cli({"capture", "-m", m, "--tokens", ids, "--max-tokens", "16", "-o", ref, "--force"});
  ASSERT_EQ(cap.exit_code, 0) << cap.err;
  const auto manifest = nlohmann::json::parse(read_file(ref + "/manifest.json"));
  EXPECT_EQ(manifest["tokens"].size(), 16u);
  EXPECT_EQ(manifest["tokens"][0], 11);  // the first id as given
  EXPECT_EQ(manifest["text"]["token_ids"], true);
  ASSERT_EQ(run_cli({"calibrate", "--reference", ref}).exit_code, 0);
  const CliResult checked = run_cli({"check", "--reference", ref, "--model", m});
  EXPECT_EQ(checked.exit_code, 0) << checked.err;
  const CliResult curve =
      run_cli({"length-curve", "--a", m, "--b-ub", "7", "--tokens", ids, "--lengths", "8,32"});
  EXPECT_EQ(curve.exit_code, 0) << curve.err;
}
