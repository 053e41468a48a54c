// What one token says, as the hover tooltip (#tok-tip) and the pinned panel show it: where it
// is, KL and both NLLs, and both arms' top-5.
import { h, clear } from "./dom";
import { fmt, fmtPct, isNum, visibleToken } from "./format";
import type { Num, Position, TopEntry } from "./types";

function probOf(nll: Num): string {
  return isNum(nll) ? fmtPct(Math.exp(-nll)) : "—";
}

export function topList(id: string, title: string, list: TopEntry[] | undefined, actual: string): HTMLElement {
  const ol = h("ol", { id, class: "top-list" });
  for (const [text, p] of list ?? []) {
    ol.appendChild(
      h("li", { class: text === actual ? "hit" : null }, h("span", { class: "top-tok" }, visibleToken(String(text))), h("span", { class: "top-p" }, fmtPct(p))),
    );
  }
  return h("div", { class: "top-col" }, h("div", { class: "top-title" }, title), ol);
}

/** "C:P": `p.pos` is the token's index; the logits that predict it are at p.pos − 1, which is
 *  how show --position, --worst and export name a position. */
export function whereOf(chunk: number, p: Position): string {
  return `${chunk}:${p.pos - 1}`;
}

/** The token, where it is, its numbers and both top-5 lists; ids prefixed by `idp`. */
export function tokenFacts(p: Position, chunk: number, idp: string): HTMLElement[] {
  const text = typeof p.text === "string" ? p.text : "";
  const dn = isNum(p.nll_a) && isNum(p.nll_b) ? p.nll_b - p.nll_a : null;
  return [
    h("div", { class: "tip-token" }, visibleToken(text)),
    h("div", { class: "tip-where muted small" }, `position ${whereOf(chunk, p)} (show --position ${whereOf(chunk, p)})`),
    h(
      "table",
      { class: "tip-stats" },
      h("tr", null, h("th", null, "KL(A‖B)"), h("td", null, fmt(p.kl))),
      h("tr", null, h("th", null, "NLL A"), h("td", null, `${fmt(p.nll_a)}  (p ${probOf(p.nll_a)})`)),
      h("tr", null, h("th", null, "NLL B"), h("td", null, `${fmt(p.nll_b)}  (p ${probOf(p.nll_b)})`)),
      h("tr", null, h("th", null, "ΔNLL B−A"), h("td", null, fmt(dn))),
    ),
    h("div", { class: "tip-tops" }, topList(`${idp}-top-a`, "A top 5", p.top_a, text), topList(`${idp}-top-b`, "B top 5", p.top_b, text)),
  ];
}

export function fillTip(tip: HTMLElement, p: Position, chunk: number): void {
  clear(tip);
  tip.append(...tokenFacts(p, chunk, "tip"));
}

export function placeTip(tip: HTMLElement, target: Element): void {
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
