// uPlot charts drawn from PlotSpecs, each in <div class="plot" data-plot=NAME> with
// "Download PNG" (the chart canvas) and "Download SVG" (rebuilt from the same spec).
import uPlot from "uplot";
import { h, downloadBlob, downloadURL, onSchemeChange } from "./dom";
import { fmt } from "./format";
import { floorBelowLogMin, LOG_MIN, type PlotSpec, wantsLogY, xExtent, xTickLabel, yExtent, yExtentLog } from "./plot_specs";
import { toSvg } from "./plot_svg";

const HEIGHT = 280;
const AXIS_FONT = "12px system-ui, sans-serif";
const FLOOR_BASELINE = `floor ≤ ${LOG_MIN.toExponential(0)}`;

function withAlpha(hex: string, alpha: string): string {
  return hex + alpha; // "#rrggbb" + "aa"
}

export interface PlotHandle {
  el: HTMLElement;
  /** Creates the chart; call once el is in the document so its width is known. */
  mount(): void;
  resize(): void;
  destroy(): void;
}

/** The page's colours (style.css variables), so charts follow the light or dark scheme. */
function themeColour(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

export function makePlot(spec: PlotSpec): PlotHandle {
  const chartBox = h("div", { class: "plot-chart" });
  let log = wantsLogY(spec);
  const logBox = h("input", { type: "checkbox", class: "plot-log", checked: log, disabled: spec.bars.length > 0 });
  logBox.addEventListener("change", () => {
    log = logBox.checked;
    if (u) {
      u.destroy();
      u = null;
      mountChart();
    }
  });
  const el = h(
    "figure",
    { class: "plot", "data-plot": spec.name },
    h("figcaption", null, spec.title),
    chartBox,
    spec.note ? h("p", { class: "plot-note" }, spec.note) : null,
    h(
      "div",
      { class: "plot-downloads" },
      h("label", { class: "plot-log-label", title: spec.bars.length > 0 ? "steps can be negative: a log axis cannot show them" : "logarithmic y axis" }, logBox, " log y"),
      h("button", { type: "button", class: "link-button", onclick: () => savePng() }, "Download PNG"),
      h("button", { type: "button", class: "link-button", onclick: () => saveSvg() }, "Download SVG"),
    ),
  );
  let u: uPlot | null = null;

  const width = () => Math.max(320, Math.min(chartBox.clientWidth || 640, 1100));

  function savePng(): void {
    if (!u) return;
    // The chart canvas is transparent and carries no title or legend: add both on white.
    const src = u.ctx.canvas;
    const dpr = src.width / Math.max(1, u.width);
    const head = Math.round(28 * dpr);
    const out = document.createElement("canvas");
    out.width = src.width;
    out.height = src.height + head;
    const ctx = out.getContext("2d");
    if (!ctx) return;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, out.width, out.height);
    ctx.font = `${Math.round(13 * dpr)}px system-ui, sans-serif`;
    ctx.textBaseline = "middle";
    let x = 8 * dpr;
    for (const s of [...spec.lines, ...spec.bars]) {
      ctx.fillStyle = s.color;
      ctx.fillRect(x, head / 2 - 5 * dpr, 10 * dpr, 10 * dpr);
      x += 14 * dpr;
      ctx.fillStyle = "#111";
      ctx.fillText(s.label, x, head / 2);
      x += ctx.measureText(s.label).width + 16 * dpr;
    }
    ctx.drawImage(src, 0, head);
    downloadURL(`${spec.name}.png`, out.toDataURL("image/png"));
  }

  function saveSvg(): void {
    const x = u ? ([u.scales.x.min, u.scales.x.max] as [number, number]) : xExtent(spec);
    // On the axis the chart shows: log when its box is ticked.
    const y = u ? ([u.scales.y.min, u.scales.y.max] as [number, number]) : log ? yExtentLog(spec) : yExtent(spec);
    downloadBlob(`${spec.name}.svg`, new Blob([toSvg(spec, x, y, log)], { type: "image/svg+xml" }));
  }

  function mountChart(): void {
    const { opts, data, hiddenLegend } = options(spec, width(), log);
    // The axes are drawn on the canvas; the box records the y range for tests and tools.
    opts.hooks = {
      ...opts.hooks,
      setScale: [(p: uPlot, key: string) => key === "y" && (chartBox.dataset.yRange = `${p.scales.y.min},${p.scales.y.max}`)],
      draw: [...(opts.hooks?.draw ?? []), (p: uPlot) => recordTickClearance(p, chartBox)],
    };
    u = new uPlot(opts, data, chartBox);
    chartBox.dataset.logY = String(log);
    // The floor's baseline, where it is drawn (for tests and tools, as the y range).
    if (log && floorBelowLogMin(spec)) chartBox.dataset.floorBaseline = FLOOR_BASELINE;
    else delete chartBox.dataset.floorBaseline;
    chartBox.dataset.floorBelowMin = String(floorBelowLogMin(spec));
    // Band edges are series too; their legend rows would only repeat the band.
    const rows = u.root.querySelectorAll<HTMLElement>(".u-legend .u-series");
    for (const i of hiddenLegend) if (rows[i]) rows[i].style.display = "none";
    showLastValues(u);
  }

  // The canvas keeps the colours it was drawn with: a switch of scheme draws it again.
  let unlisten: () => void = () => {};
  return {
    el,
    mount() {
      if (u) return;
      mountChart();
      unlisten = onSchemeChange(() => {
        if (!u) return;
        u.destroy();
        u = null;
        mountChart();
      });
    },
    resize() {
      if (u) u.setSize({ width: width(), height: HEIGHT });
    },
    destroy() {
      unlisten();
      if (u) u.destroy();
      u = null;
    },
  };
}

/** Without the cursor on the chart, the legend shows the last point's values, not "—". */
function showLastValues(u: uPlot): void {
  const last = Math.max(0, (u.data[0]?.length ?? 1) - 1);
  if (u.cursor.idx === null || u.cursor.idx === undefined) u.setLegend({ idx: last }, false);
}

function options(spec: PlotSpec, width: number, log: boolean): { opts: uPlot.Options; data: uPlot.AlignedData; hiddenLegend: number[] } {
  const series: uPlot.Series[] = [{ label: spec.xLabel, value: (_u, v) => (v === null ? "—" : xTickLabel(spec, v) || String(v)) }];
  const data: (number | null)[][] = [spec.x];
  const bands: uPlot.Band[] = [];
  const hiddenLegend: number[] = [];
  const value = (_u: uPlot, v: number | null) => (v === null ? "—" : fmt(v));

  // A log axis places nothing below LOG_MIN (0 included): such points are left out, not moved.
  const plotted = (arr: (number | null)[]) => (log ? arr.map((v) => (v !== null && v >= LOG_MIN ? v : null)) : arr);
  for (const l of spec.lines) {
    data.push(plotted(l.y));
    // The legend says the measured value, also where the log axis leaves the point out.
    const measured = (_u: uPlot, _v: number | null, _s: number, i: number | null) => {
      const raw = i === null || i === undefined ? null : l.y[i];
      return raw === null || raw === undefined ? "—" : fmt(raw);
    };
    series.push({ label: l.label, stroke: l.color, width: 2, dash: l.dash, value: measured, points: { show: true, size: 5 } });
    if (l.lo && l.hi) {
      const hiIdx = series.length;
      data.push(plotted(l.hi), plotted(l.lo));
      series.push({ label: `${l.label} CI hi`, stroke: withAlpha(l.color, "55"), width: 1, value, points: { show: false } });
      series.push({ label: `${l.label} CI lo`, stroke: withAlpha(l.color, "55"), width: 1, value, points: { show: false } });
      bands.push({ series: [hiIdx, hiIdx + 1], fill: withAlpha(l.color, "22") });
      hiddenLegend.push(hiIdx, hiIdx + 1);
    }
  }
  for (const b of spec.bars) {
    data.push(b.y);
    // Bars and whiskers are drawn by the draw hook below; the series keeps scale, legend and cursor.
    series.push({ label: b.label, stroke: b.color, fill: b.color, value, paths: () => null, points: { show: false } });
  }

  const fg = themeColour("--fg", "#111");
  const grid = themeColour("--line", "#e5e7eb");
  const opts: uPlot.Options = {
    width,
    height: HEIGHT,
    series,
    bands,
    scales: {
      x: { time: false, range: () => xExtent(spec) },
      y: log ? { distr: 3, range: () => yExtentLog(spec) } : { range: () => yExtent(spec) },
    },
    axes: [
      {
        label: spec.xLabel,
        font: AXIS_FONT,
        labelFont: AXIS_FONT,
        stroke: fg,
        grid: { stroke: grid },
        ticks: { stroke: grid },
        incrs: [1, 2, 5, 10, 20, 50, 100],
        // Ticks at least the widest label apart (and 12 px more): 162 tap names or 57 restore
        // points thin to what fits instead of overprinting; the legend names the point under
        // the cursor in full.
        space: xLabelWidth(spec) + 12,
        values: (_u, splits) => splits.map((v) => xTickLabel(spec, v)),
      },
      {
        label: spec.yLabel,
        font: AXIS_FONT,
        labelFont: AXIS_FONT,
        stroke: fg,
        grid: { stroke: grid },
        ticks: { stroke: grid },
        size: 70,
        values: (_u, splits) => splits.map((v) => fmt(v, 3)),
      },
    ],
    cursor: { drag: { x: false, y: false } },
    hooks: {
      drawClear: [(u: uPlot) => drawFloor(u, spec)],
      draw: spec.bars.length > 0 ? [(u: uPlot) => drawBars(u, spec)] : [],
      setCursor: [(u: uPlot) => showLastValues(u)],
    },
  };
  return { opts, data: data as uPlot.AlignedData, hiddenLegend };
}

/** The widest x tick label of the plot, in CSS pixels of AXIS_FONT. */
function xLabelWidth(spec: PlotSpec): number {
  const ctx = document.createElement("canvas").getContext("2d");
  if (!ctx) return 50;
  ctx.font = AXIS_FONT;
  let widest = 0;
  for (const v of spec.x) widest = Math.max(widest, ctx.measureText(xTickLabel(spec, v)).width);
  return Math.ceil(widest);
}

/** For tests and tools: the smallest gap between two drawn x tick labels, in CSS pixels (below
 *  0: they overlap). uPlot keeps the ticks it drew on the axis (_splits, _values). */
function recordTickClearance(u: uPlot, box: HTMLElement): void {
  const axis = u.axes[0] as unknown as { _splits?: number[]; _values?: string[] };
  const splits = axis._splits ?? [], values = axis._values ?? [];
  const ctx = u.ctx;
  ctx.save();
  ctx.font = AXIS_FONT;
  let clearance = Infinity;
  let prevRight = -Infinity;
  splits.forEach((v, i) => {
    const label = values[i] ?? "";
    if (!label) return;
    const w = ctx.measureText(label).width, x = u.valToPos(v, "x");
    clearance = Math.min(clearance, x - w / 2 - prevRight);
    prevRight = x + w / 2;
  });
  ctx.restore();
  box.dataset.xTickClearance = Number.isFinite(clearance) ? clearance.toFixed(1) : "";
}

/** Grouped bars with 95 % whiskers, in canvas pixels. */
function drawBars(u: uPlot, spec: PlotSpec): void {
  const ctx = u.ctx;
  const n = spec.bars.length;
  const col = Math.abs(u.valToPos(1, "x", true) - u.valToPos(0, "x", true));
  const barW = (col * 0.8) / n;
  const y0 = u.valToPos(0, "y", true);
  const dpr = u.ctx.canvas.width / Math.max(1, u.width);
  ctx.save();
  ctx.beginPath();
  ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
  ctx.clip();
  spec.bars.forEach((b, j) => {
    spec.x.forEach((xv, i) => {
      const v = b.y[i];
      const left = u.valToPos(xv, "x", true) - (n * barW) / 2 + j * barW;
      const cx = left + barW / 2;
      if (v !== null) {
        const yv = u.valToPos(v, "y", true);
        ctx.fillStyle = b.color;
        ctx.fillRect(left + barW * 0.06, Math.min(y0, yv), barW * 0.88, Math.max(1, Math.abs(yv - y0)));
      }
      const lo = b.lo[i];
      const hi = b.hi[i];
      if (lo !== null && hi !== null) {
        const yl = u.valToPos(lo, "y", true);
        const yh = u.valToPos(hi, "y", true);
        const cap = barW * 0.2;
        ctx.strokeStyle = themeColour("--fg", "#111");
        ctx.lineWidth = Math.max(1, dpr);
        ctx.beginPath();
        ctx.moveTo(cx, yl);
        ctx.lineTo(cx, yh);
        ctx.moveTo(cx - cap, yl);
        ctx.lineTo(cx + cap, yl);
        ctx.moveTo(cx - cap, yh);
        ctx.lineTo(cx + cap, yh);
        ctx.stroke();
      }
    });
  });
  // The zero line: steps can be negative, and the sign is the point.
  ctx.strokeStyle = "#888";
  ctx.lineWidth = Math.max(1, dpr);
  ctx.beginPath();
  ctx.moveTo(u.bbox.left, y0);
  ctx.lineTo(u.bbox.left + u.bbox.width, y0);
  ctx.stroke();
  ctx.restore();
}

/** The floor as a grey band behind the series: up from the axis' bottom (or from −floor for
 *  signed steps) to the floor, per x where it varies by layer. */
function drawFloor(u: uPlot, spec: PlotSpec): void {
  const f = spec.floor;
  if (!f) return;
  const ctx = u.ctx;
  const yMin = u.scales.y.min ?? 0;
  // On a log axis the band starts at the axis' bottom; on a linear one at 0 (or −floor).
  const bottom = (hi: number) => u.valToPos(f.signed ? -hi : Math.max(yMin, 0), "y", true);
  ctx.save();
  ctx.beginPath();
  ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
  ctx.clip();
  ctx.fillStyle = "rgba(107, 114, 128, 0.18)";
  if (u.scales.y.distr === 3 && floorBelowLogMin(spec)) {
    // A floor of 0 or near it is not a point on a log axis: a labelled line at the bottom.
    const y = u.bbox.top + u.bbox.height - 1;
    ctx.strokeStyle = "rgba(107, 114, 128, 0.9)";
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    ctx.moveTo(u.bbox.left, y);
    ctx.lineTo(u.bbox.left + u.bbox.width, y);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = "rgba(75, 85, 99, 1)";
    ctx.font = AXIS_FONT;
    ctx.textAlign = "right";
    ctx.fillText(FLOOR_BASELINE, u.bbox.left + u.bbox.width - 6, y - 6);
    ctx.fillStyle = "rgba(107, 114, 128, 0.18)";
  }
  if (!Array.isArray(f.hi)) {
    const top = u.valToPos(f.hi, "y", true);
    if (f.hi > 0) ctx.fillRect(u.bbox.left, top, u.bbox.width, bottom(f.hi) - top);
  } else {
    const his = f.hi;
    const half = spec.x.length > 1 ? Math.abs(u.valToPos(spec.x[1], "x", true) - u.valToPos(spec.x[0], "x", true)) / 2 : u.bbox.width / 2;
    spec.x.forEach((xv, i) => {
      const hi = his[i];
      if (hi === null || !(hi > 0)) return;
      const top = u.valToPos(hi, "y", true);
      ctx.fillRect(u.valToPos(xv, "x", true) - half, top, half * 2, bottom(hi) - top);
    });
  }
  ctx.restore();
}
