// A quantization ladder: each run a point at its B's bits per weight (or file size), mean KL
// with its 95 % whisker on a log axis (or top-1 change on a linear one), and under each point
// its own floor as a grey tick, since a KL below its floor says nothing. SVG, so it exports as
// drawn and needs no chart library for a few labelled points.
import { h, svg, downloadBlob } from "./dom";
import { fmt, fmtBytes, fmtPct, isNum } from "./format";
import type { Num } from "./types";

export interface LadderEntry {
  label: string;
  bpw: Num;
  bytes: Num;
  kl: Num;
  kl_ci95: Num;
  top1: Num;
  /** The top-1 change rate's 95 % interval, inside [0, 1] (null where it has none). */
  top1_lo: Num;
  top1_hi: Num;
  /** The run's floor: the upper end of its interval where the run stored one, else its mean. */
  floor: Num;
  highlight?: boolean;
  /** The run's own colour (compare_view.ts's palette, the same in every chart of the page). */
  color?: string;
}

type XKey = "bpw" | "bytes";
type Metric = "kl" | "top1";

const W = 640, H = 300, L = 64, R = 16, T = 16, B = 44;

function extent(xs: number[]): [number, number] {
  const lo = Math.min(...xs), hi = Math.max(...xs);
  const pad = hi > lo ? (hi - lo) * 0.08 : Math.max(Math.abs(lo) * 0.1, 1);
  return [lo - pad, hi + pad];
}

function draw(entries: LadderEntry[], xKey: XKey, metric: Metric, bpwLabel: string): SVGElement {
  const pts = entries.filter((e) => isNum(e[xKey]) && isNum(metric === "kl" ? e.kl : e.top1));
  const root = svg("svg", { class: "ladder-svg", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "quantization ladder" });
  if (pts.length === 0) {
    root.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "axis-label", fill: "currentColor", "font-size": 12 }, "no run has a B size to place it"));
    return root;
  }
  const xs = pts.map((e) => e[xKey] as number);
  const [x0, x1] = extent(xs);
  const px = (x: number) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const val = (e: LadderEntry) => (metric === "kl" ? e.kl : e.top1) as number;
  // The whisker's ends: mean ± half-width for KL, the rate's own interval for top-1 changes.
  const whisker = (e: LadderEntry): [number, number] | null => {
    if (metric === "kl") return isNum(e.kl_ci95) ? [val(e) - e.kl_ci95, val(e) + e.kl_ci95] : null;
    return isNum(e.top1_lo) && isNum(e.top1_hi) ? [e.top1_lo, e.top1_hi] : null;
  };
  const lows = pts.map((e) => whisker(e)?.[0] ?? val(e));
  const highs = pts.map((e) => whisker(e)?.[1] ?? val(e));
  let py: (y: number) => number;
  const ticks: { y: number; label: string }[] = [];
  if (metric === "kl") {
    const positives = [...lows, ...highs, ...pts.map((e) => (isNum(e.floor) ? e.floor : 0))].filter((v) => v > 0);
    if (positives.length === 0) positives.push(1e-8, 1e-6); // every run bitwise equal: an empty axis, not NaN
    const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...positives)))), hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...positives))));
    const span = Math.log10(hi) - Math.log10(lo) || 1;
    py = (y) => T + (1 - (Math.log10(Math.max(y, lo)) - Math.log10(lo)) / span) * (H - T - B);
    for (let e = Math.log10(lo); e <= Math.log10(hi) + 1e-9; e++) ticks.push({ y: Math.pow(10, e), label: `1e${Math.round(e)}` });
  } else {
    const hi = Math.max(...highs, 1e-9) * 1.1;
    py = (y) => T + (1 - Math.max(0, y) / hi) * (H - T - B);
    for (let i = 0; i <= 4; i++) ticks.push({ y: (hi * i) / 4, label: fmtPct((hi * i) / 4, 1) });
  }
  for (const t of ticks) {
    root.append(svg("line", { x1: L, x2: W - R, y1: py(t.y), y2: py(t.y), class: "grid", stroke: "#9ca3af", "stroke-opacity": 0.4 }));
    root.append(svg("text", { x: L - 6, y: py(t.y) + 4, "text-anchor": "end", class: "tick", fill: "currentColor", "font-size": 11 }, t.label));
  }
  for (const x of [x0 + (x1 - x0) * 0.1, (x0 + x1) / 2, x1 - (x1 - x0) * 0.1])
    root.append(svg("text", { x: px(x), y: H - B + 16, "text-anchor": "middle", class: "tick", fill: "currentColor", "font-size": 11 }, xKey === "bpw" ? x.toFixed(2) : fmtBytes(x)));
  root.append(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", class: "axis-label", fill: "currentColor", "font-size": 12 }, xKey === "bpw" ? bpwLabel : "B's file size"));
  root.append(svg("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", class: "axis-label", fill: "currentColor", "font-size": 12, transform: `rotate(-90 14 ${(T + H - B) / 2})` }, metric === "kl" ? "mean KL(A‖B), log" : "top-1 change"));
  const sorted = [...pts].sort((a, b) => (a[xKey] as number) - (b[xKey] as number));
  if (sorted.length > 1) root.append(svg("polyline", { points: sorted.map((e) => `${px(e[xKey] as number)},${py(val(e))}`).join(" "), class: "ladder-line", fill: "none", stroke: "#2563eb", "stroke-opacity": 0.45 }));
  sorted.forEach((e, i) => {
    const x = px(e[xKey] as number), y = val(e);
    const g = svg("g", { class: `ladder-point${e.highlight ? " highlight" : ""}`, "data-label": e.label, "data-x": e[xKey] as number, "data-y": y, "data-color": e.color ?? "" });
    if (metric === "kl" && isNum(e.floor) && e.floor > 0) g.append(svg("line", { x1: x - 9, x2: x + 9, y1: py(e.floor), y2: py(e.floor), class: "floor-tick", stroke: "#6b7280", "stroke-width": 3 }));
    const wk = whisker(e);
    if (wk) g.append(svg("line", { x1: x, x2: x, y1: py(wk[0]), y2: py(wk[1]), class: "whisker", stroke: "currentColor" }));
    g.append(svg("circle", { cx: x, cy: py(y), r: e.highlight ? 5.5 : 4, fill: e.color ?? (e.highlight ? "#dc2626" : "#2563eb") }));
    g.append(svg("text", { x: x + 7, y: py(y) - (i % 2 ? -14 : 7), class: "point-label", fill: "currentColor", "font-size": 11 }, e.label));
    g.append(svg("title", {}, `${e.label}: ${metric === "kl" ? `mean KL ${fmt(e.kl)} ± ${fmt(e.kl_ci95)}` : `top-1 change ${fmtPct(e.top1, 3)}`}; ${fmt(e.bpw, 4)} bpw, ${fmtBytes(e.bytes)}; floor ${fmt(e.floor)}`));
    root.append(g);
  });
  return root;
}

/** The chart with its x toggle (bits per weight or file size), metric toggle and SVG export. */
/** bpwLabel says which bits per weight the entries carry (the file's, or the tensors'). */
export function ladderChart(entries: LadderEntry[], title: string, bpwLabel: string): HTMLElement {
  let xKey: XKey = "bpw";
  let metric: Metric = "kl";
  const box = h("div", { class: "ladder-chart" });
  const redraw = () => {
    box.replaceChildren(draw(entries, xKey, metric, bpwLabel));
  };
  const radio = (name: string, value: string, label: string, checked: boolean, on: () => void) =>
    h("label", null, h("input", { type: "radio", name, value, checked, onchange: on }), ` ${label} `);
  const group = `ladder-${Math.random().toString(36).slice(2)}`;
  redraw();
  return h(
    "figure",
    { class: "plot ladder", "data-plot": "ladder" },
    h("figcaption", null, title),
    box,
    h("p", { class: "plot-note" }, "Whiskers: 95 % interval over chunks; grey tick under a point: that run's floor (upper end)."),
    h(
      "div",
      { class: "plot-downloads" },
      radio(`${group}-x`, "bpw", "bits per weight", true, () => ((xKey = "bpw"), redraw())),
      radio(`${group}-x`, "bytes", "file size", false, () => ((xKey = "bytes"), redraw())),
      " · ",
      radio(`${group}-m`, "kl", "mean KL", true, () => ((metric = "kl"), redraw())),
      radio(`${group}-m`, "top1", "top-1 change", false, () => ((metric = "top1"), redraw())),
      h("button", { type: "button", class: "link-button", onclick: () => downloadBlob("ladder.svg", new Blob([new XMLSerializer().serializeToString(box.firstChild as Node)], { type: "image/svg+xml" })) }, "Download SVG"),
    ),
  );
}
