// The plug-in analyses of a run (summary.analyses): each a titled table with notes, drawn
// without knowing which analysis it is (src/analysis/plugin.h, docs/extending.md).
import { h } from "./dom";
import { fmt, DASH } from "./format";
import type { AnalysisCell, AnalysisTable, Summary } from "./types";

function cell(v: AnalysisCell): string {
  if (v === null || v === undefined) return DASH;
  if (typeof v === "object") return v.text;  // a rate with its interval (src/report/rates.h)
  return typeof v === "number" ? (Number.isInteger(v) ? String(v) : fmt(v)) : v;
}

function table(name: string, t: AnalysisTable): HTMLElement {
  return h(
    "div",
    { class: "analysis", "data-analysis": name },
    h("h3", null, t.title),
    h(
      "table",
      { class: "data analysis-table" },
      h("thead", null, h("tr", null, ...t.columns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", null, ...t.rows.map((r) => h("tr", null, ...r.map((v, i) => h(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : null, cell(v)))))),
    ),
    ...t.notes.map((n) => h("p", { class: "muted small" }, n)),
  );
}

/** A section with every analysis table, or null when the run has none. */
export function analysesSection(s: Summary): HTMLElement | null {
  const all = Object.entries(s.analyses ?? {});
  if (all.length === 0) return null;
  const map = s.routing_map?.length
    ? [h("h3", null, "Routing: layer × position"), h("pre", { class: "routing-map" }, s.routing_map.join("\n"))]
    : [];
  return h("section", { class: "analyses" }, h("h2", null, "Analyses"), ...all.map(([name, t]) => table(name, t)), ...map);
}
