// Several diffs side by side (serve's "Compare selected", `heterodyne report a.hdy b.hdy …`):
// a sortable table of the runs, the ladder (mean KL against B's bits per weight or size), the
// runs' residual and transplant curves overlaid, and a paired per-token scatter of two runs.
import { h, clear, integrityWarning } from "./dom";
import { baseName, fmt, fmtBytes, fmtPct, fmtPm, isNum } from "./format";
import { ladderChart, type LadderEntry } from "./ladder";
import { makePlot, type PlotHandle } from "./plots";
import { klFloorHi, type LineSpec, type PlotSpec } from "./plot_specs";
import { sortableTable } from "./sortable_table";
import { armInfo } from "./result_view";
import { pairPositions, tokenScatter } from "./token_scatter";
import type { Result, Summary } from "./types";

export interface NamedResult {
  name: string;
  result: Result;
}

const PALETTE = ["#2563eb", "#dc2626", "#059669", "#7c3aed", "#d97706", "#0891b2", "#db2777", "#4b5563"];

/** What tells the runs shown apart, the rule show's ladder follows too (src/report/show.cpp
 *  run_labels): of A's model, B's model (its quantization type where heterodyne made it), the
 *  K and V cache types, flash attention, the ubatch and the llama.cpp build, the ones whose
 *  values are not all the same, in that order; the file's name where none differs. */
export function runLabels(runs: { name: string; s: Summary }[]): string[] {
  const facts = runs.map(({ s }) => {
    const a = armInfo(s, "a"), b = armInfo(s, "b");
    return [
      ["A", baseName(a.model)],
      ["", s.config?.b_quant || baseName(b.model)],
      ["ctk", b.cache_type_k ?? ""],
      ["ctv", b.cache_type_v ?? ""],
      ["fa", b.flash_attn ?? ""],
      ["ub", String(b.n_ubatch ?? "")],
      ["build", b.llama_build ?? ""],
    ] as [string, string][];
  });
  const differs = (k: number) => new Set(facts.map((f) => f[k][1])).size > 1;
  const keys = facts.length > 0 ? facts[0].map((_, k) => k).filter(differs) : [];
  const labels = runs.map((r, i) =>
    keys.length === 0
      ? r.name
      : keys
          .map((k) => {
            const [key, value] = facts[i][k];
            return key === "" ? value || "—" : `${key} ${value || "default"}`;
          })
          .join(" · "),
  );
  // One run shown twice keeps one name per point: the second is "(2)".
  return labels.map((l, i) => (labels.indexOf(l) === i ? l : `${l} (${i + 1})`));
}

/** One colour per run, the same in every chart of the page. */
export function runColour(i: number): string {
  return PALETTE[i % PALETTE.length];
}

/** B's file bits per weight: its size in bits over its parameter count (both in provenance). */
export function bBpw(s: Summary): number | null {
  const b = armInfo(s, "b");
  return isNum(b.model_size) && isNum(b.n_params) && b.n_params > 0 ? (8 * b.model_size) / b.n_params : null;
}

interface Row {
  i: number;
  name: string;
  label: string;
  s: Summary;
  bpw: number | null;
}

function runsTable(rows: Row[]): HTMLElement {
  return sortableTable<Row>(
    [
      { label: "run", key: (r) => r.name, cell: (r) => h("span", null, h("span", { class: "swatch", style: `background:${runColour(r.i)}` }), ` ${r.name}`) },
      { label: "B", key: (r) => r.label, cell: (r) => r.label },
      { label: "bpw", numeric: true, key: (r) => r.bpw, cell: (r) => fmt(r.bpw, 4) },
      { label: "B size", numeric: true, key: (r) => armInfo(r.s, "b").model_size, cell: (r) => fmtBytes(armInfo(r.s, "b").model_size) },
      { label: "mean KL ± 95 %", numeric: true, key: (r) => r.s.kl_mean, cell: (r) => fmtPm(r.s.kl_mean, r.s.kl_ci95) },
      { label: "top-1 change", numeric: true, key: (r) => r.s.top1_change_rate, cell: (r) => fmtPct(r.s.top1_change_rate) },
      { label: "PPL B", numeric: true, key: (r) => r.s.ppl_b, cell: (r) => fmt(r.s.ppl_b, 5) },
      { label: "floor KL", numeric: true, key: (r) => r.s.floor_kl_mean, cell: (r) => (r.s.floor?.bitwise_identical ? "0 (bitwise)" : fmt(r.s.floor_kl_mean)) },
      { label: "positions", numeric: true, key: (r) => r.s.n_scored, cell: (r) => String(r.s.n_scored ?? "") },
    ],
    rows,
    { class: "compare-runs", rowAttrs: (r) => ({ "data-name": r.name }) },
  ).el;
}

function overlaySpecs(rows: Row[]): PlotSpec[] {
  const specs: PlotSpec[] = [];
  const withLayers = rows.filter((r) => (r.s.layers?.length ?? 0) > 0);
  if (withLayers.length > 0) {
    const layers = [...new Set(withLayers.flatMap((r) => r.s.layers!.map((l) => l.layer)))].sort((a, b) => a - b);
    const lines: LineSpec[] = withLayers.map((r) => {
      const at = new Map(r.s.layers!.map((l) => [l.layer, l.rel_err_mean]));
      return { label: r.label, color: runColour(r.i), y: layers.map((l) => (isNum(at.get(l)) ? (at.get(l) as number) : null)) };
    });
    specs.push({ name: "compare-residual", title: "Residual stream: relative L2 error after each layer, every run", xLabel: "layer", yLabel: "‖b − a‖ / ‖a‖", x: layers, lines, bars: [] });
  }
  // Transplant curves overlay where the runs share their restore points (same model shape).
  const withCurves = rows.filter((r) => (r.s.transplants?.denoise?.length ?? 0) > 0);
  if (withCurves.length > 0) {
    const points = withCurves[0].s.transplants!.denoise!.map((p) => p.point);
    const same = withCurves.filter((r) => r.s.transplants!.denoise!.map((p) => p.point).join() === points.join());
    const floors = same.map((r) => klFloorHi(r.s)).filter((v): v is number => v !== null);
    specs.push({
      name: "compare-transplants",
      title: "Denoise curves: KL(A‖B) left with A's state restored at each point, every run",
      xLabel: "restore point",
      yLabel: "mean KL",
      x: points.map((_, i) => i),
      xTicks: points,
      lines: same.map((r) => ({ label: r.label, color: runColour(r.i), y: r.s.transplants!.denoise!.map((p) => (isNum(p.kl_mean) ? p.kl_mean : null)) })),
      bars: [],
      floor: floors.length ? { hi: Math.max(...floors), signed: false } : undefined,
      note: same.length < withCurves.length ? `${withCurves.length - same.length} run(s) with other restore points left out.` : undefined,
    });
  }
  return specs;
}

function scatterSection(rows: Row[], results: NamedResult[]): { el: HTMLElement; dispose: () => void } {
  const box = h("div", { class: "scatter-slot" });
  let disposeFigure: () => void = () => {};
  const pick = (selected: number) => h("select", { class: "scatter-pick" }, ...rows.map((r) => h("option", { value: r.i, selected: r.i === selected }, r.name)));
  const x = pick(0), y = pick(Math.min(1, rows.length - 1));
  const draw = () => {
    disposeFigure();
    clear(box);
    const i = Number(x.value), j = Number(y.value);
    const floors: [number | null, number | null] = [klFloorHi(rows[i].s), klFloorHi(rows[j].s)];
    const fig = tokenScatter(pairPositions(results[i].result, results[j].result), [rows[i].name, rows[j].name], floors);
    disposeFigure = fig.dispose;
    box.append(fig.el);
  };
  x.addEventListener("change", draw);
  y.addEventListener("change", draw);
  draw();
  const el = h("section", { class: "compare-scatter" }, h("h3", null, "Per token, two runs on the same text"), h("p", null, h("label", null, "x: ", x), " ", h("label", null, "y: ", y)), box);
  return { el, dispose: () => disposeFigure() };
}

export function renderCompare(root: HTMLElement, results: NamedResult[]): () => void {
  const labels = runLabels(results.map((r) => ({ name: r.name, s: r.result.summary })));
  const rows: Row[] = results.map((r, i) => ({ i, name: r.name, label: labels[i], s: r.result.summary, bpw: bBpw(r.result.summary) }));
  const entries: LadderEntry[] = rows.map((r) => ({
    label: r.label,
    bpw: r.bpw,
    bytes: armInfo(r.s, "b").model_size,
    kl: r.s.kl_mean,
    kl_ci95: r.s.kl_ci95,
    top1: r.s.top1_change_rate,
    top1_lo: r.s.top1_change?.lo ?? null,
    top1_hi: r.s.top1_change?.hi ?? null,
    floor: klFloorHi(r.s),
    color: runColour(r.i),
  }));
  const plots: PlotHandle[] = overlaySpecs(rows).map(makePlot);
  const scatter = rows.length >= 2 ? scatterSection(rows, results) : null;
  root.append(
    h(
      "div",
      { class: "result compare" },
      ...rows.map((r) => integrityWarning(r.s.file ?? r.name, r.s.integrity)),
      h("h2", null, `${rows.length} runs compared`),
      runsTable(rows),
      ladderChart(entries, "Ladder: mean KL(A‖B) against B's size", "B's file bits per weight (8 × file size / parameters)"),
      ...plots.map((p) => p.el),
      scatter?.el,
    ),
  );
  plots.forEach((p) => p.mount());
  const onResize = () => plots.forEach((p) => p.resize());
  window.addEventListener("resize", onResize);
  return () => {
    window.removeEventListener("resize", onResize);
    plots.forEach((p) => p.destroy());
    scatter?.dispose();
  };
}
