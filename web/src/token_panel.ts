// The pinned token (#tok-panel): what the tooltip says, plus where this position's difference
// forms: its residual error after each layer and its denoise/noise curves, each beside the
// run's mean, so one token's story can be read against the average.
import { clear, h } from "./dom";
import { fmt, visibleToken, DASH } from "./format";
import { COLORS } from "./plot_specs";
import { miniChart, type MiniSeries } from "./mini_chart";
import { tokenFacts } from "./token_tip";
import type { Chunk, CurvePoint, Num, Result } from "./types";
import type { StripToken } from "./token_strip";

export interface TokenPanel {
  el: HTMLElement;
  show(t: StripToken): void;
}

const MEAN = "#6b7280";

function curveAt(curve: CurvePoint[] | undefined, names: string[]): Num[] {
  const at = new Map((curve ?? []).map((p) => [p.point, p.kl_mean]));
  return names.map((n) => at.get(n) ?? null);
}

function layerCharts(result: Result, chunk: Chunk | undefined, t: StripToken): SVGSVGElement | null {
  const layers = chunk?.layers ?? [];
  if (!t.p.rel_err || layers.length === 0) return null;
  const mean = new Map((result.summary.layers ?? []).map((l) => [l.layer, l.rel_err_mean]));
  return miniChart("residual rel. error after each layer", layers.map(String), [
    { label: "this token", colour: COLORS.ab, y: t.p.rel_err },
    { label: "run mean", colour: MEAN, y: layers.map((l) => mean.get(l) ?? null), dash: true },
  ]);
}

function transplantCharts(result: Result, chunk: Chunk | undefined, t: StripToken): SVGSVGElement[] {
  const points = chunk?.points;
  if (!points || points.length === 0) return [];
  const names = ["none", ...points];
  const tr = result.summary.transplants ?? {};
  const out: SVGSVGElement[] = [];
  const dirs: [string, Num[] | undefined, CurvePoint[] | undefined, string, Num][] = [
    ["denoise: B with A's state restored", t.p.denoise, tr.denoise, COLORS.denoise, t.p.kl],
    ["noise: A with B's state written", t.p.noise, tr.noise, COLORS.noise, 0],
  ];
  for (const [title, mine, curve, colour, atNone] of dirs) {
    if (!mine) continue;
    const series: MiniSeries[] = [
      { label: "this token", colour, y: [atNone, ...mine] },
      { label: "run mean", colour: MEAN, y: curveAt(curve, names), dash: true },
    ];
    out.push(miniChart(title, names, series));
  }
  return out;
}

/** Each per-position plug-in's rows here (the lens: one per layer; routing: one per MoE
 *  layer), as a small table under the charts. */
function analysisTables(p: StripToken["p"]): HTMLElement[] {
  // Token text keeps its whitespace visible; other text (routing's expert lists) is as stored.
  const cell = (v: number | string | null, token: boolean) => (typeof v === "number" ? fmt(v) : typeof v === "string" ? (token ? visibleToken(v) : v) : DASH);
  return Object.entries(p.analyses ?? {}).map(([name, t]) => {
    const tokens = new Set(t.token_columns ?? []);
    return h(
      "div",
      { class: "panel-analysis", "data-analysis": name },
      h("h4", null, name),
      h(
        "table",
        { class: "data small" },
        h("thead", null, h("tr", null, ...t.columns.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", null, ...t.rows.map((r) => h("tr", null, ...r.map((v, k) => h("td", null, cell(v, tokens.has(t.columns[k]))))))),
      ),
    );
  });
}

export function renderTokenPanel(result: Result): TokenPanel {
  const body = h("div", { class: "panel-body" }, h("p", { class: "muted" }, "Click a token, or move to one with the arrow keys and press Enter, to pin it here."));
  const el = h("aside", { id: "tok-panel", class: "tok-panel", "aria-live": "polite", "aria-label": "pinned token" }, h("h3", null, "Pinned token"), body);
  const byChunk = new Map(result.chunks.map((c) => [c.chunk, c]));
  return {
    el,
    show(t: StripToken) {
      clear(body);
      el.dataset.chunk = String(t.chunk);
      el.dataset.pos = String(t.p.pos);
      const chunk = byChunk.get(t.chunk);
      const charts = [layerCharts(result, chunk, t), ...transplantCharts(result, chunk, t)].filter((c): c is SVGSVGElement => c !== null);
      body.append(...tokenFacts(t.p, t.chunk, "panel"));
      if (charts.length) {
        body.append(
          h("div", { class: "panel-legend small" }, h("span", { class: "swatch-line" }, "━"), " this token  ", h("span", { class: "swatch-mean" }, "┅"), " the run's mean"),
          h("div", { class: "panel-charts" }, ...charts),
        );
      }
      body.append(...analysisTables(t.p));
    },
  };
}
