#include "common/progress.h"

#include <cmath>
#include <cstdio>
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
        std::pair{"seconds_elapsed", p.seconds_elapsed}, std::pair{"mean_kl", p.mean_kl}}) {
    if (std::isfinite(value)) j[key] = value;
  }
  j["text"] = p.text;
  // Replace, not throw, on invalid UTF-8 (a model's token text): the line must still go out.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void TimeLeft::unit_done(double seconds) {
  last_[n_ % kWindow] = seconds;
  ++n_;
}

double TimeLeft::per_unit() const {
  if (n_ == 0) return NAN;
  const int k = n_ < kWindow ? n_ : kWindow;
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += last_[i];
  return sum / k;
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char out[32];
  if (s >= 3600) {
    std::snprintf(out, sizeof out, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(out, sizeof out, "%ld:%02ld", s / 60, s % 60);
  }
  return out;
}

}  // namespace hd
