// A gate reference's page (`report ref/ [--check result.json]`, docs/gate.md): its model and
// settings, every tap's tolerance and where it came from, and a check's max |Δ| against it —
// the first divergent tap named at the top.
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { baseName, fmt, isNum } from "./format";
import { makePlot, type PlotHandle } from "./plots";
import type { PlotSpec } from "./plot_specs";
import { sortableTable } from "./sortable_table";
import type { Num } from "./types";
import { tapKey, tapText, type CheckTap } from "./kind_check";

interface Tap {
  name: string;
  step: number | null;
  shape: number[];
  atol?: Num;
  derived_from?: string;
  max_observed?: Num;
  ref_abs_max?: Num;
}

export interface ReferenceDoc {
  model: { path: string; architecture?: string; n_layer?: number };
  settings: Record<string, unknown>;
  n_tokens: number;
  decode_steps: number;
  taps: Tap[];
  calibration: { safety: number; jitter_floor: number; all_bitwise_identical: boolean; note?: string; runs?: unknown[] } | null;
  check: { passed: boolean; first_divergent_tap: string | null; taps: CheckTap[] } | null;
  check_file?: string;
}

interface Row extends Tap {
  c?: CheckTap;
}

/** A log axis cannot show 0 (a bitwise-equal tap): such points are left out of the chart. */
const positive = (v: Num) => (isNum(v) && v > 0 ? v : null);

function tapSpec(rows: Row[], hasCheck: boolean): PlotSpec {
  return {
    name: "reference-taps",
    title: "Each tap in forward order: its tolerance and the check's max |Δ|",
    xLabel: "tap",
    yLabel: "|Δ|",
    x: rows.map((_, i) => i),
    xTicks: rows.map((r) => r.name),
    lines: [
      { label: "tolerance (atol)", color: "#6b7280", y: rows.map((r) => positive(r.atol)), dash: [6, 4] },
      { label: "calibration: max observed |Δ|", color: "#0d9488", y: rows.map((r) => positive(r.max_observed)) },
      ...(hasCheck ? [{ label: "check: max |Δ|", color: "#dc2626", y: rows.map((r) => positive(r.c ? tapKey(r.c.max_abs) : null)) }] : []),
    ],
    bars: [],
    note: "Zeros (bitwise-equal taps) cannot sit on a log axis and are left out; the table lists every tap.",
  };
}

function verdict(doc: ReferenceDoc): HTMLElement {
  if (!doc.check) return h("p", { class: "muted verdict" }, "No check given: `report ref/ --check result.json` draws one (`check --json-out result.json`).");
  const over = doc.check.taps.filter((t) => t.over).length;
  return doc.check.passed
    ? h("p", { class: "verdict ok-line", "data-passed": "true" }, `Passed: every tap within its tolerance (${doc.check.taps.length} taps).`)
    : h("p", { class: "verdict warn-line", "data-passed": "false" }, `FAILED: first divergent tap ${doc.check.first_divergent_tap}; ${over} of ${doc.check.taps.length} taps over their tolerance.`);
}

export function renderReference(root: HTMLElement, doc: ReferenceDoc): PlotHandle[] {
  const byName = new Map((doc.check?.taps ?? []).map((t) => [t.name, t]));
  const rows: Row[] = doc.taps.map((t) => ({ ...t, c: byName.get(t.name) }));
  const plots = [makePlot(tapSpec(rows, !!doc.check))];
  const settings = Object.entries(doc.settings).map(([k, v]) => `${k} ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ");
  const cal = doc.calibration;
  const table = sortableTable<Row>(
    [
      { label: "tap", key: (r) => r.name, cell: (r) => r.name },
      { label: "shape", cell: (r) => r.shape.join(" × ") },
      { label: "tolerance", numeric: true, key: (r) => r.atol, cell: (r) => fmt(r.atol) },
      { label: "from", key: (r) => r.derived_from, cell: (r) => r.derived_from ?? "not calibrated" },
      { label: "calibration max |Δ|", numeric: true, key: (r) => r.max_observed, cell: (r) => fmt(r.max_observed) },
      { label: "check max |Δ|", numeric: true, key: (r) => (r.c ? tapKey(r.c.max_abs) : null), cell: (r) => (r.c ? tapText(r.c.max_abs) : fmt(null)) },
      { label: "rel err", numeric: true, key: (r) => (r.c ? tapKey(r.c.rel_err) : null), cell: (r) => (r.c ? tapText(r.c.rel_err, 3) : fmt(null)) },
      { label: "over", key: (r) => (r.c ? (r.c.over ? 1 : 0) : null), cell: (r) => (r.c?.over ? h("strong", { class: "over" }, "OVER") : r.c ? "within" : "") },
    ],
    rows,
    { class: "reference-taps", rowAttrs: (r) => ({ "data-tap": r.name, "data-over": r.c ? String(r.c.over) : "" }) },
  );
  root.append(
    h(
      "section",
      { class: "kind-reference" },
      verdict(doc),
      h("p", null, `${baseName(doc.model.path)}${doc.model.architecture ? ` (${doc.model.architecture})` : ""}: ${doc.n_tokens} tokens, ${doc.decode_steps} decode steps, ${doc.taps.length} taps.`),
      h("p", { class: "muted" }, settings),
      h("p", null, cal ? `Calibrated: safety ${cal.safety}, jitter floor ${cal.jitter_floor}, ${cal.runs?.length ?? "?"} runs${cal.all_bitwise_identical ? ", all bitwise identical to the reference" : ""}. ${cal.note ?? ""}` : "Not calibrated: run `heterodyne calibrate --reference ref/`."),
      doc.check_file ? h("p", { class: "muted" }, `check result: ${doc.check_file}`) : null,
      ...plots.map((p) => p.el),
      table.el,
    ),
  );
  return plots;
}

registerKindView("reference", renderReference);
