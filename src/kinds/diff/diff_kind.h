// The diff: two arms on identical tokens, every number stored per position (docs/diff.md).
// The kind every other builds on: its file is what show, export, the report and the compare
// page read in full (report/show.h).
#pragma once
#include <string_view>

#include "kinds/diff/diff_run.h"
#include "kinds/kind.h"

namespace hd::kinds {

class DiffKind : public RunKind {
 public:
  std::string_view name() const override { return kDiffKind; }
  std::string_view description() const override {
    return "run two arms on identical tokens and store every number";
  }
  void add_command(CLI::App& app, cli::Context& ctx) const override;  // diff_command.cpp
  Shown show(const std::string& path, const ShowRequest& request) const override;
  nlohmann::json document(const std::string& path) const override;
  CatalogEntry catalog_entry(const std::string& path) const override;
  void verify(const std::string& path, const run::VerifyOptions& options,
              const ProgressFn& progress) const override;  // diff_verify.cpp
  bool holds_positions() const override { return true; }
  bool runs_from_form() const override { return true; }
  const run::Sharding* sharding() const override;
};

}  // namespace hd::kinds
