// `heterodyne server-floor`: the deployment floor (docs/server.md). One model and its settings,
// run as the plain arm (-np 1, no prompt cache: one request alone) and as a server arm over
// `trials` compositions of what else the server is doing (trial t: neighbour seed S + t, slot
// (K + t) mod slots). Per position: how far the compositions move the logits from the plain arm
// (KL), how many change its top-1, and whether they disagree among themselves. The answer in one
// line: "with these settings, x % of greedy tokens depend on what else the server is doing".
//
// Stored in an experiment file of kind "server-floor": meta "config" and "provenance", the table
// server_floor_positions (server_floor_rows.h), one chunk per transaction, and at the end meta
// "server-floor" (the summary show prints). It resumes and verifies like every kind.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/progress.h"
#include "engine/arm.h"
#include "run/chunk_loop.h"
#include "run/input.h"
#include "run/verify.h"

namespace hd::kinds {

inline constexpr std::string_view kServerFloorKind = "server-floor";

struct ServerFloorConfig {
  engine::ArmSettings arm;  // the server arm; the plain arm is it without its server settings
  std::string text_file;
  bool token_ids = false;
  int chunk = 64;
  int max_chunks = 0;  // 0: every whole chunk
  bool skip_unencodable = false;
  int trials = 8;
};

nlohmann::json to_json(const ServerFloorConfig& c);
ServerFloorConfig server_floor_config_from_json(const nlohmann::json& j);

run::RunEnd server_floor_run(const ServerFloorConfig& config, const std::string& out, bool replace,
                             const std::string& command_line, const ProgressFn& progress);
run::RunEnd server_floor_resume(const std::string& path, const std::string& command_line,
                                const ProgressFn& progress, const run::InputPath& again);
// Every stored chunk computed again and compared bit for bit: RuntimeError at the first
// difference.
void server_floor_verify(const std::string& path, const run::VerifyOptions& options,
                         const ProgressFn& progress);

}  // namespace hd::kinds
