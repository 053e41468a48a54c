// A standalone SVG of a PlotSpec: vector output for papers and slides, drawn from the same
// data as the uPlot chart (uPlot itself only renders to canvas).
import { fmt } from "./format";
import type { PlotSpec } from "./plot_specs";
import { floorBelowLogMin, LOG_MIN, xTickLabel } from "./plot_specs";

const W = 760;
const H = 380;
const M = { left: 78, right: 18, top: 56, bottom: 48 };

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function niceTicks(min: number, max: number, count: number): number[] {
  const span = max - min;
  if (!(span > 0)) return [min];
  const raw = span / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

/** Decades from lo to hi, for a log axis. */
function decadeTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.ceil(Math.log10(lo) - 1e-9); e <= Math.floor(Math.log10(hi) + 1e-9); e++) out.push(Math.pow(10, e));
  return out;
}

/** The floor as a polygon over x: [0 or the axis bottom, hi] (or [−hi, hi] for signed steps). */
function floorBand(spec: PlotSpec, X: (v: number) => number, Y: (v: number) => number, bottom: number): string | null {
  const f = spec.floor;
  if (!f) return null;
  const his = spec.x.map((_, i) => (Array.isArray(f.hi) ? f.hi[i] : f.hi));
  const idx = spec.x.map((_, i) => i).filter((i) => his[i] !== null && (his[i] as number) > 0);
  if (idx.length === 0) return null;
  const half = idx.length === 1 || spec.xTicks ? 0.5 : 0;
  const xs = (i: number, side: number) => X(spec.x[i] + side * half);
  const top = idx.flatMap((i) => [`${xs(i, -1).toFixed(1)},${Y(his[i] as number).toFixed(1)}`, `${xs(i, 1).toFixed(1)},${Y(his[i] as number).toFixed(1)}`]);
  const low = (i: number) => (f.signed ? Y(-(his[i] as number)) : bottom);
  const bot = [...idx].reverse().flatMap((i) => [`${xs(i, 1).toFixed(1)},${low(i).toFixed(1)}`, `${xs(i, -1).toFixed(1)},${low(i).toFixed(1)}`]);
  return `<polygon points="${[...top, ...bot].join(" ")}" fill="#6b7280" fill-opacity="0.15"/>`;
}

/** log: a base-10 y axis, as the chart shows when its "log y" box is ticked (values ≤ 0 are
 *  left out there, as uPlot leaves them out). */
export function toSvg(spec: PlotSpec, xr: [number, number], yr: [number, number], log = false): string {
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const ty = (v: number) => (log ? Math.log10(v) : v);
  const X = (v: number) => M.left + ((v - xr[0]) / (xr[1] - xr[0])) * pw;
  const Y = (v: number) => M.top + ph - ((ty(log ? Math.max(v, yr[0]) : v) - ty(yr[0])) / (ty(yr[1]) - ty(yr[0]))) * ph;
  const shown = (v: number | null): v is number => v !== null && (!log || v >= LOG_MIN);
  const f = (v: number) => v.toFixed(1);
  const o: string[] = [];
  o.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`);
  o.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  o.push(`<text x="${W / 2}" y="18" text-anchor="middle" font-size="14" font-weight="600">${esc(spec.title)}</text>`);

  // Legend row under the title.
  let lx = M.left;
  for (const s of [...spec.lines, ...spec.bars]) {
    o.push(`<rect x="${lx}" y="30" width="10" height="10" fill="${s.color}"/>`);
    o.push(`<text x="${lx + 14}" y="39">${esc(s.label)}</text>`);
    lx += 14 + s.label.length * 6.5 + 18;
  }

  // Grid and axes.
  for (const t of log ? decadeTicks(yr[0], yr[1]) : niceTicks(yr[0], yr[1], 5)) {
    o.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${f(Y(t))}" y2="${f(Y(t))}" stroke="#e5e7eb"/>`);
    o.push(`<text x="${M.left - 6}" y="${f(Y(t) + 4)}" text-anchor="end">${esc(fmt(t, 3))}</text>`);
  }
  // As many labels as fit side by side (6.5 px a character at 12 px, as the legend reckons).
  const widest = Math.max(1, ...spec.x.map((v) => xTickLabel(spec, v).length)) * 6.5 + 12;
  const every = Math.max(1, Math.ceil(spec.x.length / 16), Math.ceil((spec.x.length * widest) / pw));
  spec.x.forEach((xv, i) => {
    if (i % every !== 0) return;
    o.push(`<text x="${f(X(xv))}" y="${M.top + ph + 16}" text-anchor="middle">${esc(xTickLabel(spec, xv))}</text>`);
  });
  o.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#9ca3af"/>`);
  o.push(`<text x="${M.left + pw / 2}" y="${H - 8}" text-anchor="middle">${esc(spec.xLabel)}</text>`);
  o.push(`<text transform="translate(14 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}</text>`);
  const band = floorBand(spec, X, Y, M.top + ph);
  if (band) o.push(band);
  if (log && floorBelowLogMin(spec)) {
    // As on screen: a floor of 0 or near it is a labelled line at the axis' bottom.
    const y = M.top + ph - 1;
    o.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${f(y)}" y2="${f(y)}" stroke="#6b7280" stroke-dasharray="6 4"/>`);
    o.push(`<text x="${M.left + pw - 6}" y="${f(y - 6)}" text-anchor="end" fill="#4b5563">floor ≤ ${LOG_MIN.toExponential(0)}</text>`);
  }
  if (!log && yr[0] < 0 && yr[1] > 0) o.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${f(Y(0))}" y2="${f(Y(0))}" stroke="#888"/>`);

  // Bands, then lines, so lines stay on top.
  for (const l of spec.lines) {
    if (!l.lo || !l.hi) continue;
    const lo = l.lo;
    const hi = l.hi;
    const idx = spec.x.map((_, i) => i).filter((i) => shown(lo[i]) && shown(hi[i]));
    if (idx.length < 2) continue;
    const top = idx.map((i) => `${f(X(spec.x[i]))},${f(Y(hi[i] as number))}`);
    const bottom = idx.reverse().map((i) => `${f(X(spec.x[i]))},${f(Y(lo[i] as number))}`);
    o.push(`<polygon points="${[...top, ...bottom].join(" ")}" fill="${l.color}" fill-opacity="0.13"/>`);
  }
  for (const l of spec.lines) {
    // Split at nulls, as uPlot does, rather than drawing across a gap.
    let seg: string[] = [];
    const flush = () => {
      if (seg.length > 1) o.push(`<polyline points="${seg.join(" ")}" fill="none" stroke="${l.color}" stroke-width="2"${l.dash ? ` stroke-dasharray="${l.dash.join(" ")}"` : ""}/>`);
      seg = [];
    };
    spec.x.forEach((xv, i) => {
      const v = l.y[i];
      if (!shown(v)) return flush();
      seg.push(`${f(X(xv))},${f(Y(v))}`);
      o.push(`<circle cx="${f(X(xv))}" cy="${f(Y(v))}" r="2.5" fill="${l.color}"/>`);
    });
    flush();
  }

  const n = spec.bars.length;
  if (n > 0) {
    const barW = (Math.abs(X(1) - X(0)) * 0.8) / n;
    spec.bars.forEach((b, j) => {
      spec.x.forEach((xv, i) => {
        const left = X(xv) - (n * barW) / 2 + j * barW;
        const cx = left + barW / 2;
        const v = b.y[i];
        if (v !== null) {
          const y0 = Y(0);
          const yv = Y(v);
          o.push(`<rect x="${f(left + barW * 0.06)}" y="${f(Math.min(y0, yv))}" width="${f(barW * 0.88)}" height="${f(Math.max(0.5, Math.abs(yv - y0)))}" fill="${b.color}"/>`);
        }
        const lo = b.lo[i];
        const hi = b.hi[i];
        if (lo !== null && hi !== null) {
          const cap = barW * 0.2;
          o.push(`<path d="M${f(cx)} ${f(Y(lo))}V${f(Y(hi))}M${f(cx - cap)} ${f(Y(lo))}H${f(cx + cap)}M${f(cx - cap)} ${f(Y(hi))}H${f(cx + cap)}" stroke="#111" fill="none"/>`);
        }
      });
    });
  }
  o.push("</svg>");
  return o.join("\n");
}
