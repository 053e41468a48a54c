// libFuzzer target: see harness.h (report_embed).
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hd::fuzz::report_embed(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
