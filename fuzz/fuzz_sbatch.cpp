// libFuzzer target: see harness.h (sbatch_value).
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hd::fuzz::sbatch_value(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
