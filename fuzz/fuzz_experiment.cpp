// libFuzzer target: the experiment-file reader. The input is written as a file and opened the
// way show, export and verify open one. Expected outcomes: it reads, or InputError /
// RuntimeError (a damaged file named as such); anything else is a finding.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "errors.h"
#include "report/show.h"
#include "report/stored_result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/heterodyne-fuzz-" + std::to_string(getpid()) + ".hdy";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const std::string kind = hd::report::experiment_kind(path);
    if (kind == "diff") {
      const auto l = hd::report::load_experiment(path);
      (void)hd::report::summary_json(l, 3).dump();
    } else {
      (void)hd::report::result_json(hd::report::load_result(path, kind)).dump();
    }
  } catch (const hd::InputError&) {
  } catch (const hd::RuntimeError&) {
  }
  return 0;
}
