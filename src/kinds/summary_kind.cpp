#include "kinds/summary_kind.h"

#include <sstream>

#include "errors.h"
#include "store/experiment.h"

namespace hd::kinds {

namespace {

class SummaryKind final : public RunKind {
 public:
  explicit SummaryKind(const SummaryKindParts& parts) : p_(parts) {}
  std::string_view name() const override { return p_.name; }
  std::string_view description() const override { return p_.description; }
  bool hidden() const override { return p_.hidden; }
  void add_command(CLI::App& app, cli::Context& ctx) const override {
    p_.add_command(*this, app, ctx);
  }
  void verify(const std::string& path, const run::VerifyOptions& options,
              const ProgressFn& progress) const override {
    p_.verify(path, options, progress);
  }
  const run::Sharding* sharding() const override { return p_.sharding; }
  std::vector<std::string> export_tables() const override { return p_.export_tables; }
  report::KindRows export_rows(const std::string& path, const std::string& table) const override {
    return p_.export_rows != nullptr ? p_.export_rows(path, table) : RunKind::export_rows(path, table);
  }
  Shown show(const std::string& path, const ShowRequest& request) const override;
  nlohmann::json document(const std::string& path) const override;
  CatalogEntry catalog_entry(const std::string& path) const override;

 private:
  report::LoadedResult load(const std::string& path) const {
    return report::load_result(path, std::string(name()), p_.add_rows);
  }

  SummaryKindParts p_;
};

Shown SummaryKind::show(const std::string& path, const ShowRequest& r) const {
  if (r.worst || r.transplants || r.components || r.flips || r.position || !r.alone.empty()) {
    throw InputError("'" + path + "' is a " + std::string(name()) +
                     ": --worst, --transplants, --components, --flips, --position, --routing and "
                     "--lens are for diffs");
  }
  const report::LoadedResult l = load(path);
  std::ostringstream out;
  if (r.json) {
    out << json_text(report::result_json(l));
  } else {
    p_.print(out, l);
  }
  return {out.str(), l.integrity == store::kIntegrityMismatch};
}

nlohmann::json SummaryKind::document(const std::string& path) const {
  const report::LoadedResult l = load(path);
  nlohmann::json doc = report::result_json(l);
  std::ostringstream text;
  p_.print(text, l);
  doc["text"] = text.str();
  return doc;
}

// What ran, listed while it runs too (its summary comes at the end).
CatalogEntry SummaryKind::catalog_entry(const std::string& path) const {
  const store::Experiment e = store::Experiment::open(path, false);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(e.stored_config());
  } catch (const nlohmann::json::exception&) {
    throw InputError("'" + path + "' is damaged: its configuration is not valid JSON");
  }
  const auto model = [&](const char* arm) -> std::string {
    if (!config.is_object()) return "";
    if (config.contains(arm) && config[arm].is_object()) return config[arm].value("model", "");
    return std::string(arm) == "a" ? config.value("model", "") : "";  // one arm: "model"
  };
  CatalogEntry entry;
  entry.kind = name();
  entry.status = e.live_status();
  entry.a = model("a");
  entry.b = model("b");
  return entry;
}

}  // namespace

std::unique_ptr<const RunKind> summary_kind(const SummaryKindParts& parts) {
  return std::make_unique<SummaryKind>(parts);
}

}  // namespace hd::kinds
