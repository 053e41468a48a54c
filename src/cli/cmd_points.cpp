// heterodyne points --model m.gguf [--json] [--nodes]
// heterodyne points --fixtures
// The model's points as the survey found and proved them in its graph (engine/point_survey.h),
// and what each analysis can do on it; --fixtures: the same for llama.cpp's fixture of every
// architecture, as the Markdown table docs/architectures.md holds (a test keeps it current).
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "engine/fixtures.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "errors.h"

namespace hd::cli {
namespace {

// What the routing analyses can do: "-" on a dense model, else the layers that route and
// whether their routing is read only or also written (the transplant).
std::string routing_cell(const engine::PointMap& m) {
  int routed = 0;
  for (const std::string& r : m.router) routed += r.empty() ? 0 : 1;
  if (routed == 0) return m.no_routing.find("routes no tokens") != std::string::npos ? "-" : "no";
  return fmt::format("{} of {} layers, {}", routed, m.n_layer,
                     m.routing_transplant() ? "read and written" : "read");
}

// One row of the table: yes/no per analysis, then why not (each reason once).
std::string table_row(const std::string& arch, bool moe, const engine::PointMap& m) {
  std::string why;
  for (const std::string* r : {&m.no_floor, &m.no_residuals, &m.no_transplants,
                               &m.no_components, &m.no_per_head, &m.no_routing,
                               &m.no_routing_transplant}) {
    if (r->empty() || r->find("routes no tokens") != std::string::npos) continue;
    if (why.find(*r) == std::string::npos) why += (why.empty() ? "" : "; ") + *r;
  }
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  return fmt::format("| {} | {} | yes | {} | {} | {} | {} | {} | {} | {} |\n", arch,
                     moe ? "moe" : "dense", yes(m.floor()), yes(m.residuals()),
                     yes(m.transplants()), yes(m.components()), yes(m.has_per_head()),
                     routing_cell(m), why);
}

void print_fixture_table() {
  std::cout << "| architecture | fixture | logits | floor | residuals | transplants | components "
               "| per-head | routing | why not |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const engine::FixtureArch& a : engine::fixture_archs()) {
    for (const bool moe : {false, true}) {
      if (!(moe ? a.moe : a.dense)) continue;
      const std::string file = engine::ensure_fixture(a.name, moe, 1);
      try {
        std::cout << table_row(a.name, moe, engine::survey_points(engine::model_load(file)));
      } catch (const std::runtime_error& e) {  // llama.cpp loads it; heterodyne takes no numbers
        if (dynamic_cast<const Stopped*>(&e) != nullptr) throw;
        std::string why = e.what();  // without the cache's path, which differs by machine
        for (size_t at; (at = why.find(file)) != std::string::npos;) why.replace(at, file.size(), "the fixture");
        std::cout << fmt::format("| {} | {} | no | no | no | no | no | no | - | {} |\n", a.name,
                                 moe ? "moe" : "dense", why);
      }
    }
  }
}

}  // namespace

void add_points(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string model;
    bool json = false, nodes = false, fixtures = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "points", "find a model's points in its graph, prove them, and say what each analysis can do");
  CLI::Option* model_opt = cmd->add_option("--model,-m", o->model, "the GGUF");
  CLI::Option* fixtures = cmd->add_flag(
      "--fixtures", o->fixtures,
      "the table for llama.cpp's fixture of every architecture (docs/architectures.md)");
  fixtures->excludes(model_opt);
  cmd->add_flag("--json", o->json, "the point map as JSON");
  cmd->add_flag("--nodes", o->nodes,
                "also list every node the graph computes, with the shape a point reads");
  cmd->callback([o, &ctx] {
    ctx.exit_code = 0;
    if (o->fixtures) return print_fixture_table();
    if (o->model.empty()) throw InputError("points needs --model FILE.gguf (or --fixtures)");
    const auto model = engine::model_load(o->model);
    std::vector<engine::Hook::Node> nodes;
    const engine::PointMap m = engine::survey_points(model, &nodes);
    if (o->json) {
      nlohmann::json j = engine::to_json(m);
      j["analyses"] = engine::capability_lines(m);
      if (o->nodes) {
        j["nodes"] = nlohmann::json::array();
        for (const auto& n : nodes) {
          j["nodes"].push_back({{"name", n.name}, {"readable", n.readable}, {"width", n.width},
                                {"rows", n.rows}});
        }
      }
      std::cout << j.dump(2) << "\n";
      ctx.exit_code = 0;
      return;
    }
    std::cout << fmt::format("{}: {}, {} layers\n", o->model, m.architecture, m.n_layer);
    for (const std::string& line : m.proofs) std::cout << "  " << line << "\n";
    for (const std::string& line : engine::capability_lines(m)) std::cout << line << "\n";
    if (o->nodes) {
      std::cout << "\nnodes of the survey's batch (logits for its second half; width x rows; "
                   "- : no point can be read there):\n";
      for (const auto& n : nodes) {
        std::cout << fmt::format("  {:<32} {}\n", n.name,
                                 n.readable ? fmt::format("{} x {}", n.width, n.rows) : "-");
      }
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
