// Turns the summary into plain plot descriptions. uPlot (plots.ts) and the SVG export
// (plot_svg.ts) both draw from these, so the PNG and the SVG always show the same series.
import { isNum } from "./format";
import type { ComponentDirection, Interval, Num, Summary, Transplants } from "./types";

export interface LineSpec {
  label: string;
  color: string;
  y: (number | null)[];
  /** Optional 95 % band, drawn as a fill between lo and hi. */
  lo?: (number | null)[];
  hi?: (number | null)[];
  dash?: number[];
}

export interface BarSpec {
  label: string;
  color: string;
  y: (number | null)[];
  lo: (number | null)[];
  hi: (number | null)[];
}

export interface PlotSpec {
  name: string;
  title: string;
  xLabel: string;
  yLabel: string;
  x: number[];
  /** Category names for x = 0, 1, …; absent for numeric x (layers). */
  xTicks?: string[];
  lines: LineSpec[];
  bars: BarSpec[];
  note?: string;
  /** The floor, drawn as a grey band: [0, hi] for errors and KL, [−hi, hi] for signed steps
   *  ("within the floor" means |value| − ci ≤ hi). One value, or one per x. */
  floor?: { hi: number | (number | null)[]; signed: boolean };
}

export const COLORS = {
  ab: "#2563eb",
  floor: "#6b7280",
  denoise: "#2563eb",
  noise: "#dc2626",
  attention: "#7c3aed",
  mlp: "#0d9488",
};

const num = (v: Num): number | null => (isNum(v) ? v : null);

/** Intervals come as [lo, hi]; a bare number is read as a ± half-width. */
function bounds(mean: Num, ci: Interval | Num | undefined): [number | null, number | null] {
  if (Array.isArray(ci)) return [num(ci[0]), num(ci[1])];
  if (isNum(mean) && isNum(ci)) return [mean - ci, mean + ci];
  return [null, null];
}

export function residualSpec(s: Summary): PlotSpec | null {
  const layers = s.layers ?? [];
  if (layers.length === 0) return null;
  const lines: LineSpec[] = [
    {
      label: "A vs B",
      color: COLORS.ab,
      y: layers.map((l) => num(l.rel_err_mean)),
      lo: layers.map((l) => bounds(l.rel_err_mean, l.rel_err_ci95)[0]),
      hi: layers.map((l) => bounds(l.rel_err_mean, l.rel_err_ci95)[1]),
    },
  ];
  const floor = s.floor && layers.some((l) => isNum(l.floor_rel_err_mean)) ? { hi: layers.map((l) => num(l.floor_rel_err_mean)), signed: false } : undefined;
  return {
    floor,
    name: "residual",
    title: "Residual stream: relative L2 error after each layer",
    xLabel: "layer",
    yLabel: "‖b − a‖ / ‖a‖",
    x: layers.map((l) => l.layer),
    lines,
    bars: [],
  };
}

export function transplantSpec(t: Transplants, floorHi: number | null): PlotSpec | null {
  const d = t.denoise ?? [];
  const n = t.noise ?? [];
  const points = (d.length >= n.length ? d : n).map((p) => p.point);
  if (points.length === 0) return null;
  const lines: LineSpec[] = [];
  for (const [label, curve, color] of [
    ["denoise: B with A's state restored", d, COLORS.denoise],
    ["noise: A with B's state written", n, COLORS.noise],
  ] as const) {
    if (curve.length === 0) continue;
    // Align by point name so a missing point in one curve cannot shift the other.
    const at = new Map(curve.map((p) => [p.point, p]));
    const pick = (f: (c: (typeof curve)[number]) => number | null) =>
      points.map((name) => {
        const p = at.get(name);
        return p ? f(p) : null;
      });
    lines.push({
      label,
      color,
      y: pick((p) => num(p.kl_mean)),
      lo: pick((p) => bounds(p.kl_mean, p.kl_ci95)[0]),
      hi: pick((p) => bounds(p.kl_mean, p.kl_ci95)[1]),
    });
  }
  return {
    name: "transplants",
    title: "Transplants: KL(A‖·) with one arm's residual written at each restore point",
    xLabel: "restore point",
    yLabel: "mean KL",
    x: points.map((_, i) => i),
    xTicks: points,
    lines,
    bars: [],
    floor: floorHi === null ? undefined : { hi: floorHi, signed: false },
  };
}

export function componentSpec(c: ComponentDirection, direction: "denoise" | "noise", floorHi: number | null): PlotSpec | null {
  const layers = c.layers ?? [];
  if (layers.length === 0) return null;
  return {
    name: direction === "denoise" ? "components" : "components-noise",
    title: `Components (${direction}): KL carried by each layer's attention and MLP`,
    xLabel: "layer",
    yLabel: "KL step",
    x: layers.map((l) => l.layer),
    lines: [],
    bars: [
      {
        label: "attention",
        color: COLORS.attention,
        y: layers.map((l) => num(l.attention)),
        lo: layers.map((l) => bounds(l.attention, l.attention_ci95)[0]),
        hi: layers.map((l) => bounds(l.attention, l.attention_ci95)[1]),
      },
      {
        label: "MLP",
        color: COLORS.mlp,
        y: layers.map((l) => num(l.mlp)),
        lo: layers.map((l) => bounds(l.mlp, l.mlp_ci95)[0]),
        hi: layers.map((l) => bounds(l.mlp, l.mlp_ci95)[1]),
      },
    ],
    floor: floorHi === null ? undefined : { hi: floorHi, signed: true },
    note: "Bars: mean step per position; whiskers: 95 % interval (chunks as clusters); grey band: ± the floor. Negative steps are shown, not clipped.",
  };
}

/** The upper end of the run's KL floor (mean + interval), or null without one. */
export function klFloorHi(s: Summary): number | null {
  if (!isNum(s.floor_kl_mean)) return null;
  return s.floor_kl_mean + (isNum(s.floor_kl_ci95) ? s.floor_kl_ci95 : 0);
}

function floorValues(spec: PlotSpec): number[] {
  const f = spec.floor;
  if (!f) return [];
  const his = (Array.isArray(f.hi) ? f.hi : [f.hi]).filter((v): v is number => v !== null);
  return f.signed ? his.flatMap((v) => [v, -v]) : his;
}

/** Every positive value of a plot, for choosing and fitting a log axis. */
/** The smallest value a log y axis shows. A floor of exactly 0 (bitwise) or of rounding
 *  (≈1e-15) would otherwise stretch the axis over a dozen empty decades below the data: what
 *  lies below is drawn as a labelled baseline ("floor ≤ 1e-9"), never as a point. */
export const LOG_MIN = 1e-9;

/** The values a log axis places: those of LOG_MIN and above. */
export function positiveValues(spec: PlotSpec): number[] {
  const out: number[] = [];
  for (const l of spec.lines) for (const arr of [l.y, l.lo, l.hi]) for (const v of arr ?? []) if (v !== null && v >= LOG_MIN) out.push(v);
  for (const v of floorValues(spec)) if (v >= LOG_MIN) out.push(v);
  return out;
}

/** Whether the plot's floor is below LOG_MIN somewhere (0 included): on a log axis it is then
 *  the labelled baseline at the axis' bottom. */
export function floorBelowLogMin(spec: PlotSpec): boolean {
  const f = spec.floor;
  if (!f) return false;
  const his = Array.isArray(f.hi) ? f.hi : [f.hi];
  return his.some((v) => v !== null && v < LOG_MIN);
}

/** Log y suits line plots of non-negative values spanning more than two decades. */
export function wantsLogY(spec: PlotSpec): boolean {
  if (spec.bars.length > 0) return false;
  const v = positiveValues(spec);
  return v.length > 1 && Math.max(...v) / Math.min(...v) > 100;
}

/** Decade bounds around the positive values. */
export function yExtentLog(spec: PlotSpec): [number, number] {
  const v = positiveValues(spec);
  if (v.length === 0) return [1e-6, 1];
  const lo = Math.max(LOG_MIN, Math.pow(10, Math.floor(Math.log10(Math.min(...v)))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...v))));
  return [lo, hi > lo ? hi : lo * 10];
}

/** Every value a plot must fit on its y axis, bands, whiskers and the floor included. */
export function yExtent(spec: PlotSpec): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  const take = (arr: (number | null)[] | undefined) => {
    for (const v of arr ?? []) {
      if (v === null) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  };
  for (const l of spec.lines) {
    take(l.y);
    take(l.lo);
    take(l.hi);
  }
  for (const b of spec.bars) {
    take(b.y);
    take(b.lo);
    take(b.hi);
  }
  take(floorValues(spec));
  if (!Number.isFinite(lo)) return [0, 1];
  // Errors and KL are ≥ 0: keep 0 on the axis so the size of a change is read honestly.
  lo = Math.min(lo, 0);
  if (hi <= lo) hi = lo + 1;
  const pad = (hi - lo) * 0.06;
  return [lo < 0 ? lo - pad : lo, hi + pad];
}

export function xExtent(spec: PlotSpec): [number, number] {
  const min = Math.min(...spec.x);
  const max = Math.max(...spec.x);
  // Bars need half a column of room each side; lines on categories a little.
  const pad = spec.bars.length > 0 ? 0.5 : spec.x.length > 1 ? 0.15 : 0.5;
  return [min - pad, max + pad];
}

export function xTickLabel(spec: PlotSpec, v: number): string {
  if (!Number.isInteger(v)) return "";
  if (spec.xTicks) return spec.xTicks[v] ?? "";
  return spec.x.includes(v) ? String(v) : "";
}
