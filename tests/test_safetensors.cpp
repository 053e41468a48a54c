// safetensors written byte for byte as the format specifies, read back, and refused when broken.
#include <gtest/gtest.h>

#include <cstring>

#include "errors.h"
#include "store/safetensors.h"
#include "unit_support.h"

using hd::store::NamedTensor;

namespace {

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

std::string sample() {
  return hd::store::safetensors_bytes({{"a", {2}, {1.0f, -2.0f}}, {"b", {1, 1}, {0.5f}}},
                                      {{"format", "pt"}});
}

}  // namespace

TEST(Safetensors, LayoutIsTheSpecsByteForByte) {
  // The header lists tensors in the order written; its length makes the data 8-byte aligned.
  std::string json =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[1,1],"data_offsets":[8,12]}})";
  json.append((8 - json.size() % 8) % 8, ' ');
  // 1.0f, -2.0f, 0.5f in IEEE 754 little-endian.
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x00\x3f", 12);
  const std::string expected = le64(json.size()) + json + data;
  EXPECT_EQ(sample(), expected);
  EXPECT_EQ((8 + json.size()) % 8, 0u);
}

TEST(Safetensors, RoundTripsThroughAFile) {
  const std::string path = hd::test::temp_dir("safetensors") + "/t.safetensors";
  std::vector<NamedTensor> in = {{"inp_embd", {3, 2}, {1, 2, 3, 4, 5, 6}},
                                 {"l_out-0", {3, 2}, {-1, 0.25f, 1e-30f, 3e30f, 0, -0.0f}}};
  hd::store::write_safetensors(path, in, {{"model_sha256", "abc"}});
  const auto f = hd::store::read_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(f.tensors[i].name, in[i].name);
    EXPECT_EQ(f.tensors[i].shape, in[i].shape);
    EXPECT_EQ(std::memcmp(f.tensors[i].data.data(), in[i].data.data(), 24), 0);  // bits, -0 too
  }
  EXPECT_EQ(f.metadata.at("model_sha256"), "abc");
}

TEST(Safetensors, BrokenFilesAreRefusedWithAReason) {
  const std::string good = sample();
  ASSERT_NO_THROW(hd::store::parse_safetensors(good, "good"));
  const auto refused = [](const std::string& bytes, const char* reason) {
    try {
      hd::store::parse_safetensors(bytes, "x.safetensors");
      ADD_FAILURE() << "accepted: " << reason;
    } catch (const hd::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("x.safetensors"), std::string::npos) << e.what();
    }
  };
  refused(good.substr(0, 5), "shorter than 8 bytes");
  refused(le64(1u << 30) + good.substr(8), "header length past the end");
  refused(good.substr(0, good.size() - 1), "data cut short");
  refused(good + "x", "trailing byte");
  std::string not_json = good;
  not_json[8] = '[';
  refused(not_json, "header not an object / not JSON");
  std::string f16 = good;
  f16.replace(f16.find("F32"), 3, "F16");
  refused(f16, "dtype other than F32");
  std::string gap = good;
  gap.replace(gap.find("[8,12]"), 6, "[9,13]");
  refused(gap, "a gap between tensors");
  std::string shape = good;
  shape.replace(shape.find("[1,1]"), 5, "[2,1]");
  refused(shape, "shape that does not match the offsets");
  EXPECT_THROW(hd::store::safetensors_bytes({{"a", {2}, {1.0f}}}, {}), hd::InputError);
  EXPECT_THROW(hd::store::safetensors_bytes({{"a", {1}, {1.0f}}, {"a", {1}, {2.0f}}}, {}),
               hd::InputError);
}
