// The text of every chunk, one <span class="tok"> per position, shaded by KL(A‖B).
// Built in one DocumentFragment and driven by a single delegated mouseover listener,
// so 20 000 tokens cost one layout and no per-token closures.
import { h, clear } from "./dom";
import { fmt, fmtPct, isNum, visibleToken } from "./format";
import type { Num, Position, Result, TopEntry } from "./types";

/** Below this KL a token gets no shade: differences this small are numerical noise. */
const KL_LO = 1e-5;
const LEVELS = 64;

/** Log-scale colour ramp from pale yellow to red; precomputed so tokens share strings. */
function makeRamp(): string[] {
  const ramp: string[] = [];
  for (let i = 0; i < LEVELS; i++) {
    // Gamma > 1 keeps the bulk of ordinary tokens light so the outliers stand out.
    const t = Math.pow(i / (LEVELS - 1), 1.8);
    ramp.push(`hsl(${(52 - 52 * t).toFixed(1)} 95% ${(93 - 38 * t).toFixed(1)}%)`);
  }
  return ramp;
}

export interface KlScale {
  lo: number;
  hi: number;
  level(kl: Num): number; // -1: no shade
  ramp: string[];
}

export function klScale(result: Result): KlScale {
  let max = 0;
  for (const c of result.chunks)
    for (const p of c.positions) if (p.scored && isNum(p.kl) && p.kl > max) max = p.kl;
  const lo = KL_LO;
  const hi = Math.max(max, lo * 10);
  const span = Math.log(hi) - Math.log(lo);
  return {
    lo,
    hi,
    ramp: makeRamp(),
    level(kl: Num): number {
      if (!isNum(kl) || kl < lo) return -1;
      const t = (Math.log(kl) - Math.log(lo)) / span;
      return Math.max(0, Math.min(LEVELS - 1, Math.round(t * (LEVELS - 1))));
    },
  };
}

function top1(list: TopEntry[] | undefined): string | undefined {
  return list && list.length > 0 ? list[0][0] : undefined;
}

function legend(scale: KlScale): HTMLElement {
  const stops = scale.ramp.filter((_, i) => i % 8 === 0 || i === LEVELS - 1).join(", ");
  return h(
    "div",
    { class: "kl-legend" },
    h("span", null, `KL ≤ ${fmt(scale.lo, 2)}`),
    h("span", { class: "kl-ramp", style: `background: linear-gradient(to right, ${stops})` }),
    h("span", null, `${fmt(scale.hi, 3)} (max, log scale)`),
    h("span", { class: "legend-sample" }, "unscored"),
  );
}

/** The section holding the legend, the #kl-strip and the #tok-tip tooltip; dispose drops the
 *  window listener when the serve UI navigates away. */
export function renderTokenStrip(result: Result): { el: HTMLElement; dispose: () => void } {
  const scale = klScale(result);
  const strip = h("div", { id: "kl-strip", class: "kl-strip" });
  const tip = h("div", { id: "tok-tip", class: "tok-tip", hidden: true, role: "tooltip" });
  // Element → position, so the hover handler needs no search and no parsing.
  const byEl = new WeakMap<Element, Position>();

  const frag = document.createDocumentFragment();
  result.chunks.forEach((c, ci) => {
    if (ci > 0) frag.appendChild(h("span", { class: "chunk-sep" }, `chunk ${c.chunk}`));
    for (const p of c.positions) {
      const span = document.createElement("span");
      let cls = "tok";
      const text = typeof p.text === "string" ? p.text : "";
      if (!p.scored) cls += " unscored";
      else {
        const lvl = scale.level(p.kl);
        if (lvl >= 0) span.style.backgroundColor = scale.ramp[lvl];
        const ta = top1(p.top_a);
        if (ta !== undefined && ta !== top1(p.top_b)) cls += " flip";
      }
      if (text.includes("\n")) cls += " nl";
      if (text === "") cls += " empty";
      span.className = cls;
      span.dataset.chunk = String(c.chunk);
      span.dataset.pos = String(p.pos);
      span.textContent = text;
      byEl.set(span, p);
      frag.appendChild(span);
    }
  });
  strip.appendChild(frag);

  let current: Element | null = null;
  strip.addEventListener("mouseover", (ev) => {
    const target = (ev.target as Element).closest(".tok");
    if (!target || target === current) return;
    const p = byEl.get(target);
    if (!p || !p.scored) {
      hide();
      return;
    }
    current = target;
    fillTip(tip, p, Number((target as HTMLElement).dataset.chunk));
    placeTip(tip, target);
  });
  strip.addEventListener("mouseleave", hide);
  // A fixed tooltip would drift away from its token on scroll.
  window.addEventListener("scroll", hide, { passive: true });
  function hide(): void {
    current = null;
    tip.hidden = true;
  }

  const flips = h("input", { type: "checkbox", id: "show-flips" });
  flips.addEventListener("change", () => strip.classList.toggle("show-flips", flips.checked));

  const el = h(
    "section",
    { class: "text-section" },
    h("h2", null, "Text, shaded by KL(A‖B) per token"),
    h(
      "div",
      { class: "strip-controls" },
      legend(scale),
      h("label", null, flips, " outline tokens where the top-1 prediction changed"),
    ),
    strip,
    tip,
  );
  return { el, dispose: () => window.removeEventListener("scroll", hide) };
}

function probOf(nll: Num): string {
  return isNum(nll) ? fmtPct(Math.exp(-nll)) : "—";
}

function topList(id: string, title: string, list: TopEntry[] | undefined, actual: string): HTMLElement {
  const ol = h("ol", { id, class: "top-list" });
  for (const [text, p] of list ?? []) {
    ol.appendChild(
      h(
        "li",
        { class: text === actual ? "hit" : null },
        h("span", { class: "top-tok" }, visibleToken(String(text))),
        h("span", { class: "top-p" }, fmtPct(p)),
      ),
    );
  }
  return h("div", { class: "top-col" }, h("div", { class: "top-title" }, title), ol);
}

// `p.pos` is the token's index; the logits that predict it are at p.pos - 1, which is how
// show --position, --worst and export name a position (C:P).
function fillTip(tip: HTMLElement, p: Position, chunk: number): void {
  clear(tip);
  const text = typeof p.text === "string" ? p.text : "";
  const dn = isNum(p.nll_a) && isNum(p.nll_b) ? p.nll_b - p.nll_a : null;
  tip.append(
    h("div", { class: "tip-token" }, visibleToken(text)),
    h("div", { class: "tip-where muted small" }, `position ${chunk}:${p.pos - 1} (show --position ${chunk}:${p.pos - 1})`),
    h(
      "table",
      { class: "tip-stats" },
      h("tr", null, h("th", null, "KL(A‖B)"), h("td", null, fmt(p.kl))),
      h("tr", null, h("th", null, "NLL A"), h("td", null, `${fmt(p.nll_a)}  (p ${probOf(p.nll_a)})`)),
      h("tr", null, h("th", null, "NLL B"), h("td", null, `${fmt(p.nll_b)}  (p ${probOf(p.nll_b)})`)),
      h("tr", null, h("th", null, "ΔNLL B−A"), h("td", null, fmt(dn))),
    ),
    h(
      "div",
      { class: "tip-tops" },
      topList("tip-top-a", "A top 5", p.top_a, text),
      topList("tip-top-b", "B top 5", p.top_b, text),
    ),
  );
}

function placeTip(tip: HTMLElement, target: Element): void {
  tip.hidden = false;
  const r = target.getBoundingClientRect();
  const w = tip.offsetWidth;
  const ht = tip.offsetHeight;
  let left = Math.min(r.left, window.innerWidth - w - 8);
  let top = r.bottom + 6;
  if (top + ht > window.innerHeight - 4) top = Math.max(4, r.top - ht - 6);
  left = Math.max(4, left);
  tip.style.left = `${left}px`;
  tip.style.top = `${top}px`;
}
