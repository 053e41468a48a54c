// `heterodyne echo`: the smallest kind, the worked example of docs/extending.md. It runs one
// arm (A) over a text chunk by chunk and stores, at every position, the negative log-likelihood
// of the next token: what llama-perplexity averages. Nothing in it is new as a measurement; it
// exists to show (and to test) that a kind is one folder and one registration line.
//
// Stored in an experiment file of kind "echo": meta "config" and "provenance", the table
// echo_positions (chunk, pos, token, nll), one chunk per transaction, and at the end meta
// "echo" (the summary show prints). It resumes and verifies like every kind.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/progress.h"
#include "engine/arm.h"
#include "run/chunk_loop.h"
#include "run/verify.h"
#include "run/input.h"

namespace hd::kinds {

inline constexpr std::string_view kEchoKind = "echo";  // the kind's name (echo_kind.cpp)

struct EchoConfig {
  engine::ArmSettings a;
  std::string text_file;
  bool token_ids = false;  // text_file holds token ids (--tokens)
  int chunk = 128;
  int max_chunks = 0;  // 0: every whole chunk
  bool skip_unencodable = false;
};

nlohmann::json to_json(const EchoConfig& c);
EchoConfig echo_config_from_json(const nlohmann::json& j);

run::RunEnd echo_run(const EchoConfig& config, const std::string& out, bool replace,
                     const std::string& command_line, const ProgressFn& progress);
// `echo --resume`: the chunks still missing, with the model and input checked as stored.
run::RunEnd echo_resume(const std::string& path, const std::string& command_line,
                        const ProgressFn& progress, const run::InputPath& again);
// Every stored chunk computed again and compared bit for bit: RuntimeError at the first
// difference.
void echo_verify(const std::string& path, const run::VerifyOptions& options, const ProgressFn& progress);

}  // namespace hd::kinds
