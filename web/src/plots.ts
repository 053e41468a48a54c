// uPlot charts drawn from PlotSpecs, each in <div class="plot" data-plot=NAME> with
// "Download PNG" (the chart canvas) and "Download SVG" (rebuilt from the same spec).
import uPlot from "uplot";
import { h, downloadBlob, downloadURL } from "./dom";
import { fmt } from "./format";
import { type PlotSpec, xExtent, xTickLabel, yExtent } from "./plot_specs";
import { toSvg } from "./plot_svg";

const HEIGHT = 280;
const AXIS_FONT = "12px system-ui, sans-serif";

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

export function makePlot(spec: PlotSpec): PlotHandle {
  const chartBox = h("div", { class: "plot-chart" });
  const el = h(
    "figure",
    { class: "plot", "data-plot": spec.name },
    h("figcaption", null, spec.title),
    chartBox,
    spec.note ? h("p", { class: "plot-note" }, spec.note) : null,
    h(
      "div",
      { class: "plot-downloads" },
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
    const y = u ? ([u.scales.y.min, u.scales.y.max] as [number, number]) : yExtent(spec);
    downloadBlob(`${spec.name}.svg`, new Blob([toSvg(spec, x, y)], { type: "image/svg+xml" }));
  }

  return {
    el,
    mount() {
      if (u) return;
      const { opts, data, hiddenLegend } = options(spec, width());
      u = new uPlot(opts, data, chartBox);
      // Band edges are series too; their legend rows would only repeat the band.
      const rows = u.root.querySelectorAll<HTMLElement>(".u-legend .u-series");
      for (const i of hiddenLegend) if (rows[i]) rows[i].style.display = "none";
    },
    resize() {
      if (u) u.setSize({ width: width(), height: HEIGHT });
    },
    destroy() {
      if (u) u.destroy();
      u = null;
    },
  };
}

function options(spec: PlotSpec, width: number): { opts: uPlot.Options; data: uPlot.AlignedData; hiddenLegend: number[] } {
  const series: uPlot.Series[] = [{ label: spec.xLabel, value: (_u, v) => (v === null ? "—" : xTickLabel(spec, v) || String(v)) }];
  const data: (number | null)[][] = [spec.x];
  const bands: uPlot.Band[] = [];
  const hiddenLegend: number[] = [];
  const value = (_u: uPlot, v: number | null) => (v === null ? "—" : fmt(v));

  for (const l of spec.lines) {
    data.push(l.y);
    series.push({ label: l.label, stroke: l.color, width: 2, dash: l.dash, value, points: { show: true, size: 5 } });
    if (l.lo && l.hi) {
      const hiIdx = series.length;
      data.push(l.hi, l.lo);
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

  const opts: uPlot.Options = {
    width,
    height: HEIGHT,
    series,
    bands,
    scales: {
      x: { time: false, range: () => xExtent(spec) },
      y: { range: () => yExtent(spec) },
    },
    axes: [
      {
        label: spec.xLabel,
        font: AXIS_FONT,
        labelFont: AXIS_FONT,
        incrs: [1, 2, 5, 10, 20, 50, 100],
        values: (_u, splits) => splits.map((v) => xTickLabel(spec, v)),
      },
      {
        label: spec.yLabel,
        font: AXIS_FONT,
        labelFont: AXIS_FONT,
        size: 70,
        values: (_u, splits) => splits.map((v) => fmt(v, 3)),
      },
    ],
    cursor: { drag: { x: false, y: false } },
    hooks: spec.bars.length > 0 ? { draw: [(u: uPlot) => drawBars(u, spec)] } : {},
  };
  return { opts, data: data as uPlot.AlignedData, hiddenLegend };
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
        ctx.strokeStyle = "#111";
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
