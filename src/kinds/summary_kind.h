// A kind whose stored result is one summary in its meta table under the kind's name, written
// when the run finishes (report/stored_result.h): show prints it with the kind's `print`, --json
// and the report carry it as is, serve lists the run by its configuration. sweep, floor,
// recommend and the example kind are such kinds; each gives its printer and, where it keeps rows in tables
// of its own, the reader that adds them to the summary.
#pragma once
#include <memory>
#include <ostream>

#include "kinds/kind.h"
#include "report/stored_result.h"

namespace hd::kinds {

class SummaryKind : public RunKind {
 public:
  Shown show(const std::string& path, const ShowRequest& request) const override;
  nlohmann::json document(const std::string& path) const override;
  nlohmann::json catalog_entry(const std::string& path) const override;

 protected:
  virtual void print(std::ostream& out, const report::LoadedResult& l) const = 0;
  virtual report::AddRows add_rows() const { return nullptr; }

 private:
  report::LoadedResult load(const std::string& path) const;
};

// A summary kind made of its parts, with no class of its own: what most kinds are. `add_command`
// gets the kind itself, for its name and description.
struct SummaryKindParts {
  std::string_view name, description;
  void (*add_command)(const RunKind& kind, CLI::App& app, cli::Context& ctx) = nullptr;
  void (*verify)(const std::string& path, const run::VerifyOptions& options,
                 const ProgressFn& progress) = nullptr;
  void (*print)(std::ostream& out, const report::LoadedResult& l) = nullptr;
  report::AddRows add_rows = nullptr;
  const run::Sharding* sharding = nullptr;  // null: its runs do not shard
  bool hidden = false;
};
std::unique_ptr<const RunKind> summary_kind(const SummaryKindParts& parts);

}  // namespace hd::kinds
