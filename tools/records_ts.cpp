// Writes web/src/records.ts: the TypeScript interfaces of the typed records the server sends
// the web UI, from their C++ field tables (common/record.h), so that the two cannot drift.
// `make records-ts` runs it into web/src/records.ts; the test Web.RecordsTsIsCurrent fails
// when the committed file is not what it writes.
#include <iostream>

#include "common/record.h"
#include "engine/arm_settings.h"
#include "kinds/catalog_entry.h"
#include "serve/runs.h"

namespace {

// The settings of one arm as stored (config's a and b, provenance's arms), from kArmFields.
std::string stored_arm_ts() {
  std::string out =
      "/** One arm's settings as stored (config a and b, provenance arms): "
      "src/engine/arm_settings.h's kArmFields. */\nexport interface StoredArm {\n";
  hd::engine::for_each_arm_field([&](const auto& field) {
    using T = typename std::decay_t<decltype(field)>::Value;
    out += std::string("  ") + field.info.key + ": " + hd::record_detail::ts_type<T>() + ";\n";
  });
  return out + "}\n";
}

}  // namespace

int main() {
  std::cout << "// Written by tools/records_ts.cpp from the C++ field tables (common/record.h): do "
               "not edit.\n// `make records-ts` writes it again; make test checks it is "
               "current.\nimport type { Num } from \"./types\";\n\n"
            << hd::record_ts<hd::kinds::CatalogEntry>() << "\n"
            << hd::record_ts<hd::serve::RunState>() << "\n"
            << stored_arm_ts();
  return 0;
}
