// A small inline SVG line chart for the token panel: a few series over named x points, the y
// axis logarithmic when the values span more than two decades (zeros then sit on the axis).
import { svg as el } from "./dom";
import { isNum, fmt } from "./format";
import { LOG_MIN } from "./plot_specs";
import type { Num } from "./types";

export interface MiniSeries {
  label: string;
  colour: string;
  y: Num[];
  dash?: boolean;
}

const W = 360;
const H = 150;
const L = 52;
const B = 22;

export function miniChart(title: string, x: string[], series: MiniSeries[]): SVGSVGElement {
  const vals = series.flatMap((s) => s.y.filter((v): v is number => isNum(v)));
  const pos = vals.filter((v) => v >= LOG_MIN);  // a log axis shows nothing below (plot_specs.ts)
  const hi = Math.max(...vals, 1e-12);
  const lo = pos.length ? Math.min(...pos) : hi / 10;
  const log = pos.length > 0 && hi / lo > 100;
  const yMin = log ? Math.pow(10, Math.floor(Math.log10(lo))) : Math.min(0, ...vals);
  const yMax = log ? Math.pow(10, Math.ceil(Math.log10(hi))) : hi * 1.08;
  const ty = (v: number) => {
    const t = log ? (Math.log10(Math.max(v, yMin)) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin)) : (v - yMin) / (yMax - yMin || 1);
    return H - B - t * (H - B - 14);
  };
  const tx = (i: number) => L + (x.length > 1 ? (i / (x.length - 1)) * (W - L - 8) : (W - L) / 2);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "mini-chart", role: "img", "aria-label": title }) as SVGSVGElement;
  svg.append(el("text", { x: L, y: 10, class: "mini-title" }, `${title}${log ? " (log y)" : ""}`));
  const ticks = log ? Array.from({ length: Math.round(Math.log10(yMax / yMin)) + 1 }, (_, k) => yMin * Math.pow(10, k)) : [yMin, (yMin + yMax) / 2, yMax];
  for (const t of ticks) {
    svg.append(el("line", { x1: L, x2: W - 8, y1: ty(t), y2: ty(t), class: "mini-grid" }));
    svg.append(el("text", { x: L - 4, y: ty(t) + 4, "text-anchor": "end", class: "mini-tick" }, fmt(t, 2)));
  }
  const every = Math.max(1, Math.ceil(x.length / 8));
  x.forEach((name, i) => {
    if (i % every === 0 || i === x.length - 1) svg.append(el("text", { x: tx(i), y: H - 6, "text-anchor": "middle", class: "mini-tick" }, name));
  });
  for (const s of series) {
    const pts = s.y.map((v, i) => (isNum(v) ? `${tx(i).toFixed(1)},${ty(v).toFixed(1)}` : null)).filter((p) => p !== null);
    if (pts.length === 0) continue;
    svg.append(el("polyline", { points: pts.join(" "), fill: "none", stroke: s.colour, "stroke-width": 2, "stroke-dasharray": s.dash ? "5 3" : "none", "data-series": s.label }));
  }
  return svg;
}
