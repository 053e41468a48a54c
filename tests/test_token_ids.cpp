// The token-id files of --tokens (common/token_ids.h): both forms parse to the same ids, and
// each bad file is one message naming the file, the first bad entry and where it is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/token_ids.h"
#include "errors.h"

namespace {

const std::string kWhat = "tokens file 'ids.txt'";

std::vector<int32_t> parse(const std::string& s) { return hd::parse_token_ids(s, kWhat); }

// The message parse_token_ids throws for `s` ("" when it parses).
std::string refusal(const std::string& s) {
  try {
    (void)parse(s);
  } catch (const hd::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TokenIds, WhitespaceAndJsonFormsGiveTheSameIds) {
  const std::vector<int32_t> ids = {1, 410, 0, 2147483647, 7};
  EXPECT_EQ(parse("1 410 0 2147483647 7"), ids);
  EXPECT_EQ(parse("\n\t 1\r\n410\n0\v2147483647\f7\n\n"), ids);  // any white space, one per line
  EXPECT_EQ(parse("[1,410,0,2147483647,7]"), ids);
  EXPECT_EQ(parse("  [ 1 , 410,\n0 ,2147483647 , 7 ]\n"), ids);  // JSON's white space
  EXPECT_EQ(parse("007"), std::vector<int32_t>{7});
  EXPECT_EQ(parse("[5]"), std::vector<int32_t>{5});
}

TEST(TokenIds, EachBadEntryIsNamedWithItsIndexAndByte) {
  struct Case {
    std::string bytes, message;
  };
  const std::vector<Case> cases = {
      {"1 2 3.5 4", ": entry 2 (byte 4) is '3.5', a float, not an integer token id"},
      {"1 2e3", ": entry 1 (byte 2) is '2e3', a float, not an integer token id"},
      {"1 two 3", ": entry 1 (byte 2) is 'two', not an integer token id"},
      {"1,2,3", ": entry 0 (byte 0) is '1,2,3', not an integer token id"},
      {"1 -2 3", ": entry 1 (byte 2) is '-2', negative: token ids are 0 or more"},
      {"1 +5 3", ": entry 1 (byte 2) is '+5', signed: write a token id as digits alone"},
      {"[+5]", ": entry 0 (byte 1) is '+5', signed"},
      {"1 5+ 3", ": entry 1 (byte 2) is '5+', not an integer token id"},
      {"1 -+5", ": entry 1 (byte 2) is '-+5', not an integer token id"},
      {"1 2147483648", ": entry 1 (byte 2) is '2147483648', past any token id (they fit 32 bits)"},
      {std::string(30, '9'), "is '" + std::string(24, '9') + "…', past any token id"},
      {"1 \xff\x01", ": entry 1 (byte 2) is '\\xFF\\x01', not an integer token id"},
      {"[1, 2.0]", ": entry 1 (byte 4) is '2.0', a float, not an integer token id"},
      {"[\"1\", 2]", ": entry 0 (byte 1) is '\"1\"', not an integer token id"},
      {"[[1, 2]]", ": entry 0 (byte 1) is '[1', not an integer token id"},
      {"[1, true]", ": entry 1 (byte 4) is 'true', not an integer token id"},
      {"[1,,2]", ": entry 1 (byte 3) is '', empty (two commas, or a comma before ']')"},
      {"[1, 2,]", ": entry 2 (byte 6) is '', empty"},
      {"{\"ids\": [1, 2]}", ": entry 0 (byte 0) is '{\"ids\":', not an integer token id"},
      {"[1 2]", ": byte 3 is '2' where the JSON array needs ',' or ']'"},
      {"[1, 2", ": the JSON array opened at byte 0 is not closed (no ']')"},
      {"  [", ": the JSON array opened at byte 2 is not closed"},
      {"[1] [2]", ": byte 4 is '[', after the JSON array's end"},
      {"", " holds no token ids"},
      {" \n\t", " holds no token ids"},
      {"[ ]", " holds no token ids"},
  };
  for (const Case& c : cases) {
    const std::string why = refusal(c.bytes);
    EXPECT_EQ(why.rfind(kWhat, 0), 0u) << c.bytes << ": " << why;
    EXPECT_NE(why.find(c.message), std::string::npos) << c.bytes << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << c.bytes << ": " << why;
  }
}

TEST(TokenIds, IdsPastTheVocabularyAreRefusedOnceItsSizeIsKnown) {
  const std::vector<int32_t> ids = parse("0 127 128 5");
  EXPECT_NO_THROW(hd::check_token_ids(ids, 129, kWhat));
  try {
    hd::check_token_ids(ids, 128, kWhat);
    FAIL() << "id 128 of a 128-id vocabulary was accepted";
  } catch (const hd::InputError& e) {
    EXPECT_STREQ(e.what(),
                 "tokens file 'ids.txt': entry 2 is id 128, outside this model's vocabulary of "
                 "128 (ids 0 to 127)");
  }
}
