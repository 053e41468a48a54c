// Two runs on the same tokens, paired: each scored position a dot at (KL of run X, KL of run Y)
// on log axes, the diagonal and both floors drawn. Canvas, since a run has thousands of dots.
import { h, onSchemeChange } from "./dom";
import { fmt, isNum } from "./format";
import type { Result } from "./types";

const SIZE = 360, PAD = 48, LO = 1e-8, HI = 10;

export interface Pairing {
  x: number[];
  y: number[];
  /** Why the runs cannot be paired, or null. */
  reason: string | null;
}

/** The KL of every position both runs scored, when their chunks hold the same tokens. */
export function pairPositions(a: Result, b: Result): Pairing {
  const x: number[] = [], y: number[] = [];
  const byChunk = new Map(b.chunks.map((c) => [c.chunk, c]));
  for (const ca of a.chunks) {
    const cb = byChunk.get(ca.chunk);
    if (!cb) continue;
    if (cb.positions.length !== ca.positions.length || cb.positions.some((p, i) => p.text !== ca.positions[i].text))
      return { x: [], y: [], reason: `chunk ${ca.chunk} holds other tokens in the two runs: they did not read the same text` };
    ca.positions.forEach((p, i) => {
      const q = cb.positions[i];
      if (p.scored && q.scored && isNum(p.kl) && isNum(q.kl)) {
        x.push(p.kl);
        y.push(q.kl);
      }
    });
  }
  return { x, y, reason: x.length === 0 ? "the runs share no scored position (no chunk in common)" : null };
}

const pos = (v: number) => {
  const t = (Math.log10(Math.min(HI, Math.max(LO, v))) - Math.log10(LO)) / (Math.log10(HI) - Math.log10(LO));
  return PAD + t * (SIZE - PAD - 8);
};

function drawScatter(canvas: HTMLCanvasElement, p: Pairing, floors: [number | null, number | null]): void {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = SIZE * dpr;
  canvas.height = SIZE * dpr;
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.scale(dpr, dpr);
  const fg = getComputedStyle(canvas).color || "#111";
  const Y = (v: number) => SIZE - pos(v);
  ctx.strokeStyle = "rgba(156,163,175,.5)";
  ctx.fillStyle = fg;
  ctx.font = "11px system-ui, sans-serif";
  for (let e = Math.log10(LO); e <= Math.log10(HI); e += 2) {
    const v = Math.pow(10, e);
    ctx.beginPath();
    ctx.moveTo(pos(v), Y(LO));
    ctx.lineTo(pos(v), Y(HI));
    ctx.moveTo(pos(LO), Y(v));
    ctx.lineTo(pos(HI), Y(v));
    ctx.stroke();
    ctx.fillText(`1e${e}`, pos(v) - 10, SIZE - PAD + 16);
    ctx.fillText(`1e${e}`, 4, Y(v) + 4);
  }
  ctx.fillStyle = "rgba(107,114,128,.18)"; // each run's floor: the corner where both are noise
  if (floors[0] !== null) ctx.fillRect(pos(LO), Y(HI), pos(floors[0]) - pos(LO), Y(LO) - Y(HI));
  if (floors[1] !== null) ctx.fillRect(pos(LO), Y(floors[1]), pos(HI) - pos(LO), Y(LO) - Y(floors[1]));
  ctx.strokeStyle = fg;
  ctx.setLineDash([4, 4]);
  ctx.beginPath();
  ctx.moveTo(pos(LO), Y(LO));
  ctx.lineTo(pos(HI), Y(HI));
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.fillStyle = "rgba(37,99,235,.35)";
  for (let i = 0; i < p.x.length; i++) ctx.fillRect(pos(p.x[i]) - 1.5, Y(p.y[i]) - 1.5, 3, 3);
}

/** The figure, and the function that stops its redraws on a scheme change (call it when the
 *  figure is replaced or its page goes). */
export function tokenScatter(p: Pairing, names: [string, string], floors: [number | null, number | null]): { el: HTMLElement; dispose: () => void } {
  if (p.reason) return { el: h("p", { class: "muted scatter-none" }, `No paired scatter: ${p.reason}.`), dispose: () => {} };
  const canvas = h("canvas", { class: "token-scatter", "data-points": p.x.length, width: SIZE, height: SIZE, style: `width:${SIZE}px;height:${SIZE}px`, role: "img", "aria-label": `KL per token, ${names[0]} against ${names[1]}` });
  drawScatter(canvas, p, floors);
  // Its axis text takes the page's colour when drawn: again when the scheme changes.
  const dispose = onSchemeChange(() => drawScatter(canvas, p, floors));
  const above = p.x.filter((x, i) => p.y[i] > x).length;
  const below = p.x.filter((x, i) => p.y[i] < x).length;
  const share = (n: number) => `${n} (${((100 * n) / p.x.length).toFixed(1)} %)`;
  const el = h(
    "figure",
    { class: "scatter-box", "data-plot": "token-scatter" },
    h("figcaption", null, `KL per token: ${names[0]} (x) against ${names[1]} (y), log axes`),
    canvas,
    h("p", { class: "plot-note" }, `${p.x.length} positions; the larger KL: ${names[1]} at ${share(above)}, ${names[0]} at ${share(below)}. Dashed: equal KL; grey: each run's floor (${fmt(floors[0])}, ${fmt(floors[1])}). Values below 1e-8 sit on the axis.`),
  );
  return { el, dispose };
}
