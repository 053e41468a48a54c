// A sweep's page (src/kinds/sweep/sweep.cpp, src/kinds/sweep/sweep_view.cpp): each differing setting's Shapley
// share of the KL with its interval and the floor band, the pairwise interactions as a
// heatmap, and every one of the 2^k combinations in a sortable table.
import { registerKindView } from "./kind_views";
import { h, svg, type Child } from "./dom";
import { fmt, fmtPct, fmtPm, isNum, DASH } from "./format";
import { makePlot, type PlotHandle } from "./plots";
import type { PlotSpec } from "./plot_specs";
import { sortableTable } from "./sortable_table";
import type { Num } from "./types";

interface SweepFloor {
  kl_mean?: Num;
  kl_ci95?: Num;
  top1_change_rate?: Num;
  floor_a?: SweepFloor | null;
  floor_b?: SweepFloor | null;
}

interface Combination {
  values: Record<string, unknown>;
  possible: boolean;
  reason?: string;
  kl_mean?: Num;
  kl_ci95?: Num;
  top1_change_rate?: Num;
  ppl?: Num;
}

export interface SweepDoc {
  settings: string[];
  a: Record<string, unknown>;
  chunks: number;
  total?: Num;
  combinations: Combination[];
  floor?: SweepFloor | null;
  shapley_players?: string[];
  shapley?: Record<string, Num>;
  shapley_ci95?: Record<string, Num>;
  main_effects?: Record<string, Num>;
  main_effects_ci95?: Record<string, Num>;
  interactions?: { settings: [string, string]; value: Num; ci95: Num }[];
  interval_includes_0?: string[];
  below_floor?: string[];
}

const SHORT: Record<string, string> = { cache_type_k: "ctk", cache_type_v: "ctv", flash_attn: "fa", n_ubatch: "ub", n_threads: "threads" };
const short = (s: string) => s.split("+").map((p) => SHORT[p] ?? p).join("+");

function shown(name: string, v: unknown): string {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return name === "model" ? s.replace(/^.*[\\/]/, "") : s;
}

/** The larger upper end of A's and B's floors, as the sweep's "within the floor" reads it
 *  (src/kinds/sweep/sweep_summary.cpp floor_row); A sweep without B's floor has A's alone. */
function floorHi(f: SweepFloor | null | undefined): number | null {
  if (!f) return null;
  const upper = (x: SweepFloor | null | undefined) => (x && isNum(x.kl_mean) ? x.kl_mean + (isNum(x.kl_ci95) ? x.kl_ci95 : 0) : null);
  const ends = (f.floor_a || f.floor_b ? [upper(f.floor_a), upper(f.floor_b)] : [upper(f)]).filter((v): v is number => v !== null);
  return ends.length ? Math.max(...ends) : null;
}

function shapleySpec(r: SweepDoc): PlotSpec | null {
  const players = r.shapley_players ?? [];
  if (players.length === 0) return null;
  const v = players.map((p) => (isNum(r.shapley?.[p]) ? (r.shapley?.[p] as number) : null));
  const ci = players.map((p) => (isNum(r.shapley_ci95?.[p]) ? (r.shapley_ci95?.[p] as number) : null));
  const hi = floorHi(r.floor);
  return {
    name: "shapley",
    title: `Shapley values: each setting's share of the total KL (${fmt(r.total)})`,
    xLabel: "setting",
    yLabel: "KL",
    x: players.map((_, i) => i),
    xTicks: players.map(short),
    lines: [],
    bars: [
      {
        label: "Shapley value",
        color: "#2563eb",
        y: v,
        lo: v.map((x, i) => (x !== null && ci[i] !== null ? x - (ci[i] as number) : null)),
        hi: v.map((x, i) => (x !== null && ci[i] !== null ? x + (ci[i] as number) : null)),
      },
    ],
    floor: hi === null ? undefined : { hi, signed: true },
    note: "Bars add up to the total KL; whiskers: 95 % interval over chunks; grey band: ± the floor.",
  };
}

/** Diverging colour for an interaction: blue below 0, red above, white at 0. */
function divergent(v: number, max: number): string {
  const t = max > 0 ? Math.min(1, Math.abs(v) / max) : 0;
  if (t === 0) return "hsl(0 0% 96%)"; // exactly additive: neither colour
  return `hsl(${v < 0 ? 217 : 0} 85% ${(97 - 36 * t).toFixed(1)}%)`;
}

function interactionMap(r: SweepDoc): HTMLElement | null {
  const list = r.interactions ?? [];
  if (list.length === 0) return null;
  const names = r.settings;
  const at = new Map(list.map((x) => [`${x.settings[0]}|${x.settings[1]}`, x]));
  const find = (a: string, b: string) => at.get(`${a}|${b}`) ?? at.get(`${b}|${a}`);
  const max = Math.max(...list.map((x) => (isNum(x.value) ? Math.abs(x.value) : 0)));
  const cell = 92, head = 80;
  const size = head + cell * names.length;
  const root = svg("svg", { class: "heatmap", width: size, height: size, viewBox: `0 0 ${size} ${size}`, role: "img", "aria-label": "pairwise interactions of the settings" });
  names.forEach((n, i) => {
    root.append(svg("text", { x: head + cell * i + cell / 2, y: head - 8, "text-anchor": "middle", class: "heat-label" }, short(n)));
    root.append(svg("text", { x: head - 8, y: head + cell * i + cell / 2 + 4, "text-anchor": "end", class: "heat-label" }, short(n)));
  });
  names.forEach((a, i) =>
    names.forEach((b, j) => {
      if (i === j) return;
      const x = find(a, b);
      const v = x && isNum(x.value) ? x.value : null;
      const g = svg("g", { class: "heat-cell", "data-pair": `${a}|${b}`, "data-value": v ?? "" });
      g.append(svg("rect", { x: head + cell * j, y: head + cell * i, width: cell - 2, height: cell - 2, fill: v === null ? "#e5e7eb" : divergent(v, max) }));
      g.append(svg("title", {}, `${short(a)} × ${short(b)}: ${x ? fmtPm(x.value, x.ci95) : "not measured"}`));
      g.append(svg("text", { x: head + cell * j + cell / 2, y: head + cell * i + cell / 2, "text-anchor": "middle", class: "heat-value" }, v === null ? DASH : fmt(v, 3)));
      g.append(svg("text", { x: head + cell * j + cell / 2, y: head + cell * i + cell / 2 + 15, "text-anchor": "middle", class: "heat-ci" }, x && isNum(x.ci95) ? `± ${fmt(x.ci95, 2)}` : ""));
      root.append(g);
    }),
  );
  return h(
    "figure",
    { class: "heatmap-box", "data-plot": "interactions" },
    h("figcaption", null, "Interactions: v(both) − v(one) − v(other) + v(neither), mean over the other settings"),
    root,
    h("p", { class: "plot-note" }, "Red: the two settings together cost more KL than apart; blue: less. Hover a cell for its 95 % interval."),
  );
}

function combinationsTable(r: SweepDoc): HTMLElement {
  const isB = (name: string, v: unknown) => JSON.stringify(v) !== JSON.stringify(r.a?.[name]);
  const cols = [
    ...r.settings.map((name) => ({
      label: short(name),
      key: (c: Combination) => shown(name, c.values[name]),
      cell: (c: Combination): Child => h("span", { class: isB(name, c.values[name]) ? "is-b" : undefined, title: isB(name, c.values[name]) ? "B's value" : "A's value" }, shown(name, c.values[name])),
    })),
    { label: "mean KL", numeric: true, key: (c: Combination) => (c.possible ? c.kl_mean : null), cell: (c: Combination): Child => (c.possible ? fmtPm(c.kl_mean, c.kl_ci95) : h("span", { class: "muted" }, `cannot run: ${c.reason ?? ""}`)) },
    { label: "top-1 change", numeric: true, key: (c: Combination) => (c.possible ? c.top1_change_rate : null), cell: (c: Combination): Child => (c.possible ? fmtPct(c.top1_change_rate, 3) : "") },
    { label: "PPL", numeric: true, key: (c: Combination) => (c.possible ? c.ppl : null), cell: (c: Combination): Child => (c.possible ? fmt(c.ppl, 6) : "") },
  ];
  return sortableTable(cols, r.combinations ?? [], { class: "combinations" }).el;
}

function floorLine(f: SweepFloor | null | undefined): HTMLElement {
  if (!f) return h("p", { class: "muted" }, "No floor was measured.");
  return h("p", { class: "floor-line" }, `Numerical floor (the larger of A vs A′ and B vs B′): mean KL ${fmtPm(f.kl_mean, f.kl_ci95)}, top-1 change ${fmtPct(f.top1_change_rate, 3)}.`);
}

export function renderSweep(root: HTMLElement, r: SweepDoc): PlotHandle[] {
  const spec = shapleySpec(r);
  const plots = spec ? [makePlot(spec)] : [];
  const below = new Set(r.below_floor ?? []);
  const zero = new Set(r.interval_includes_0 ?? []);
  const says = (r.shapley_players ?? []).map((p) => {
    const tags = [zero.has(p) ? "interval includes 0" : "", below.has(p) ? "within the floor" : ""].filter((t) => t);
    return tags.length ? h("li", null, `${short(p)}: ${tags.join(", ")}`) : null;
  });
  root.append(
    h(
      "section",
      { class: "kind-sweep" },
      h("p", null, `${r.chunks} chunk(s); the arms differ in ${r.settings.length} setting(s): ${r.settings.map(short).join(", ") || "none"}.`),
      floorLine(r.floor),
      ...plots.map((p) => p.el),
      says.some((s) => s) ? h("ul", { class: "standing" }, ...says) : null,
      interactionMap(r),
      h("h3", null, `All ${r.combinations?.length ?? 0} combinations (B's values marked)`),
      combinationsTable(r),
    ),
  );
  return plots;
}

registerKindView("sweep", renderSweep);
