// Where the KL comes from, as a waterfall: the token embedding, each layer's attention and MLP,
// and what is left at the final norm + head, each a step of the denoise telescope, adding up to
// the total KL (docs/transplants.md). With --components the steps carry their 95 % intervals;
// with --transplants alone they are each layer's step, from the mean curve. A sentence on top
// names the largest shares.
import { h, svg as svgEl } from "./dom";
import { fmt, isNum } from "./format";
import { COLORS } from "./plot_specs";
import type { Interval, Summary } from "./types";

export interface Step {
  name: string;
  value: number;
  ci?: Interval;
  colour: string;
}

const num = (v: unknown): number | null => (isNum(v) ? v : null);

/** The steps and the total they add up to, or null when the run has no transplants. */
export function waterfallSteps(s: Summary): { steps: Step[]; total: number } | null {
  const c = s.components?.denoise;
  if (c && c.layers?.length && isNum(c.untouched)) {
    const steps: Step[] = [{ name: "embedding", value: num(c.embedding) ?? 0, ci: c.embedding_ci95, colour: COLORS.floor }];
    for (const l of c.layers) {
      steps.push({ name: `layer ${l.layer} attention`, value: num(l.attention) ?? 0, ci: l.attention_ci95, colour: COLORS.attention });
      steps.push({ name: `layer ${l.layer} MLP`, value: num(l.mlp) ?? 0, ci: l.mlp_ci95, colour: COLORS.mlp });
    }
    steps.push({ name: "final norm + head", value: num(c.final) ?? 0, colour: COLORS.ab });
    return { steps, total: c.untouched };
  }
  const d = s.transplants?.denoise ?? [];
  if (d.length < 2 || !isNum(d[0].kl_mean)) return null;
  const steps: Step[] = [];
  for (let k = 1; k < d.length; k++) {
    const prev = num(d[k - 1].kl_mean), cur = num(d[k].kl_mean);
    if (prev === null || cur === null) return null;
    const m = /^l_out-(\d+)$/.exec(d[k].point);
    steps.push({ name: d[k].point === "inp_embd" ? "embedding" : m ? `layer ${m[1]}` : d[k].point, value: prev - cur, colour: d[k].point === "inp_embd" ? COLORS.floor : COLORS.attention });
  }
  const last = num(d[d.length - 1].kl_mean) ?? 0;
  steps.push({ name: "final norm + head", value: last, colour: COLORS.ab });
  return { steps, total: d[0].kl_mean };
}

function phrase(name: string, prev: string | null): string {
  if (name === "embedding") return "at the token embedding";
  if (name === "final norm + head") return "at the final norm and head";
  const m = /^(layer \d+) (attention|MLP)$/.exec(name);
  if (m && prev && prev.startsWith(m[1] + " ")) return `its ${m[2]}`;
  return m ? `${m[1]}'s ${m[2]}` : name;
}

/** "43 % of the KL enters at the token embedding; layer 0's attention 29 %, its MLP 25 %." */
export function verdict(steps: Step[], total: number): string {
  if (!(total > 0)) return "The arms agree: there is no KL to attribute.";
  const top = [...steps].sort((a, b) => b.value - a.value).slice(0, 3).filter((s) => s.value > 0);
  const pct = (v: number) => `${Math.round((100 * v) / total)} %`;
  if (top.length === 0) return "No single step adds KL.";
  const [first, ...rest] = top;
  let prev: string | null = first.name;
  const tail = rest.map((s) => {
    const p = `${phrase(s.name, prev)} ${pct(s.value)}`;
    prev = s.name;
    return p;
  });
  const head = `${pct(first.value)} of the KL enters ${first.name === "embedding" || first.name === "final norm + head" ? phrase(first.name, null) : `at ${phrase(first.name, null)}`}`;
  return `${head}${tail.length ? "; " + tail.join(", ") : ""}.`;
}

function chart(steps: Step[], total: number): SVGSVGElement {
  const W = Math.max(480, Math.min(1100, 90 + steps.length * 34));
  const H = 300, L = 70, T = 12, B = 96;
  const cols = steps.length + 1;
  const colW = (W - L - 10) / cols;
  let run = 0, lo = 0, hi = total;
  for (const s of steps) {
    run += s.value;
    lo = Math.min(lo, run, s.ci && isNum(s.ci[0]) ? run - s.value + s.ci[0] : lo);
    hi = Math.max(hi, run, s.ci && isNum(s.ci[1]) ? run - s.value + s.ci[1] : hi);
  }
  const ty = (v: number) => T + ((hi - v) / (hi - lo || 1)) * (H - T - B);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, id: "waterfall", class: "waterfall", role: "img", "aria-label": "waterfall of the KL by step", "data-total": total }) as SVGSVGElement;
  for (const v of [lo, (lo + hi) / 2, hi]) svg.append(svgEl("text", { x: L - 6, y: ty(v) + 4, "text-anchor": "end", class: "mini-tick" }, fmt(v, 2)));
  svg.append(svgEl("line", { x1: L, x2: W - 10, y1: ty(0), y2: ty(0), class: "zero-line" }));
  run = 0;
  const bar = (i: number, from: number, to: number, s: Step | null) => {
    const x = L + i * colW + colW * 0.12;
    const r = svgEl("rect", { x, y: Math.min(ty(from), ty(to)), width: colW * 0.76, height: Math.max(1, Math.abs(ty(from) - ty(to))), fill: s ? s.colour : "var(--fg)" });
    r.setAttribute("class", s ? "wf-bar" : "wf-total");
    r.setAttribute("data-value", String(s ? s.value : total));
    r.setAttribute("data-step", s ? s.name : "total");
    r.append(svgEl("title", {}, `${s ? s.name : "total KL"}: ${fmt(s ? s.value : total, 3)}${s?.ci ? ` [${fmt(s.ci[0], 3)}, ${fmt(s.ci[1], 3)}]` : ""}`));
    svg.append(r);
    if (s?.ci && isNum(s.ci[0]) && isNum(s.ci[1])) {
      const cx = x + colW * 0.38;
      svg.append(svgEl("line", { x1: cx, x2: cx, y1: ty(from + s.ci[0]), y2: ty(from + s.ci[1]), class: "whisker" }));
    }
    const lx = L + (i + 0.5) * colW;
    svg.append(svgEl("text", { x: lx, y: H - B + 10, transform: `rotate(-50 ${lx} ${H - B + 10})`, "text-anchor": "end", class: "mini-tick" }, s ? s.name : "total"));
  };
  steps.forEach((s, i) => {
    bar(i, run, run + s.value, s);
    run += s.value;
  });
  bar(steps.length, 0, total, null);
  return svg;
}

export function waterfallSection(s: Summary): HTMLElement | null {
  const w = waterfallSteps(s);
  if (!w) return null;
  return h(
    "section",
    { class: "waterfall-section" },
    h("p", { id: "verdict", class: "verdict" }, verdict(w.steps, w.total)),
    h("figure", { class: "wf-figure" }, h("figcaption", null, "Where the KL comes from (denoise steps, adding up to the total)"), h("div", { class: "wf-box" }, chart(w.steps, w.total)), h("p", { class: "plot-note" }, s.components?.denoise ? "Each bar: the KL a step removes when A's state is restored into B there (whiskers: 95 % interval, chunks as clusters); the last bar is the total." : "Each bar: the KL a layer removes when A's residual is restored after it (from the mean curve; run --components for attention and MLP apart and intervals).")),
  );
}
