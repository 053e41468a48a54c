#include "common/progress.h"

#include <nlohmann/json.hpp>

namespace hd {

std::string progress_json(const Progress& p) {
  nlohmann::json j;
  switch (p.event) {
    case Progress::Event::kNote:
      j["event"] = "note";
      break;
    case Progress::Event::kChunk:
      j["event"] = "chunk";
      break;
    case Progress::Event::kPass:
      j["event"] = "pass";
      break;
    case Progress::Event::kResult:
      j["event"] = "result";
      break;
  }
  if (p.event == Progress::Event::kChunk || p.event == Progress::Event::kPass) {
    j["done"] = p.done;
    j["total"] = p.total;
  }
  if (p.event == Progress::Event::kPass) {
    j["pass"] = p.pass;
    j["passes"] = p.passes;
  }
  for (const auto& [key, value] :
       {std::pair{"seconds", p.seconds}, std::pair{"seconds_left", p.seconds_left},
        std::pair{"mean_kl", p.mean_kl}}) {
    if (std::isfinite(value)) j[key] = value;
  }
  j["text"] = p.text;
  // Replace, not throw, on invalid UTF-8 (a model's token text): the line must still go out.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace hd
