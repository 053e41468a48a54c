// libFuzzer target: see harness.h (experiment).
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hd::fuzz::experiment(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
