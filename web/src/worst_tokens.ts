// The tokens that differ most, beside the text: a table of the top tokens by KL, by |ΔNLL| or
// flips first (a header click picks the key and re-ranks every scored token, not only the rows
// on screen), with where they are, their context and A's → B's top-1. A row click goes to the
// token in the strip and pins it.
import { clear, h } from "./dom";
import { fmt, isNum, visibleToken } from "./format";
import { whereOf } from "./token_tip";
import { isFlip, top1, type StripToken } from "./token_strip";

const ROWS = 25;
const CONTEXT = 6;

type Key = "kl" | "dnll" | "flip";

const absDnll = (t: StripToken): number => (isNum(t.p.nll_a) && isNum(t.p.nll_b) ? Math.abs(t.p.nll_b - t.p.nll_a) : -1);
const klOf = (t: StripToken): number => (isNum(t.p.kl) ? t.p.kl : -1);

const ORDER: Record<Key, (a: StripToken, b: StripToken) => number> = {
  kl: (a, b) => klOf(b) - klOf(a),
  dnll: (a, b) => absDnll(b) - absDnll(a),
  flip: (a, b) => Number(isFlip(b.p)) - Number(isFlip(a.p)) || klOf(b) - klOf(a),
};

/** The tokens before i in its chunk, and i itself in brackets. */
function context(tokens: StripToken[], i: number): string {
  let s = "";
  for (let j = Math.max(0, i - CONTEXT); j < i; j++) if (tokens[j].chunk === tokens[i].chunk) s += tokens[j].p.text;
  return `${visibleToken(s).slice(-40)}[${visibleToken(tokens[i].p.text)}]`;
}

export function renderWorstTokens(tokens: StripToken[], pin: (i: number) => void): HTMLElement {
  const scored = tokens.map((t, i) => ({ t, i })).filter(({ t }) => t.p.scored && isNum(t.p.kl));
  const body = h("tbody");
  let key: Key = "kl";
  const heads: Record<Key, HTMLElement> = {
    kl: sortHead("KL(A‖B)", "kl"),
    dnll: sortHead("|ΔNLL|", "dnll"),
    flip: sortHead("flip", "flip"),
  };
  function sortHead(label: string, k: Key): HTMLElement {
    const b = h("button", { type: "button", class: "sort-button", "data-key": k, onclick: () => fill(k) }, label);
    return h("th", { "aria-sort": "none" }, b);
  }
  function fill(k: Key): void {
    key = k;
    for (const [name, th] of Object.entries(heads)) th.setAttribute("aria-sort", name === key ? "descending" : "none");
    const rows = [...scored].sort((a, b) => ORDER[key](a.t, b.t) || a.i - b.i).slice(0, ROWS);
    clear(body);
    rows.forEach(({ t, i }, rank) => {
      const flipped = isFlip(t.p);
      body.append(
        h(
          "tr",
          { "data-i": i, "data-chunk": t.chunk, "data-pos": t.p.pos, tabindex: 0, class: "worst-row", onclick: () => pin(i), onkeydown: (ev: Event) => (ev as KeyboardEvent).key === "Enter" && pin(i) },
          h("td", null, rank + 1),
          h("td", { class: "mono" }, whereOf(t.chunk, t.p)),
          h("td", { class: "mono ctx" }, context(tokens, i)),
          h("td", { class: "mono" }, `${visibleToken(top1(t.p.top_a) ?? "")} → ${visibleToken(top1(t.p.top_b) ?? "")}`),
          h("td", { class: "num", "data-kl": String(t.p.kl) }, fmt(t.p.kl, 3)),
          h("td", { class: "num" }, fmt(absDnll(t) < 0 ? null : absDnll(t), 3)),
          h("td", null, flipped ? "flip" : ""),
        ),
      );
    });
  }
  fill("kl");
  return h(
    "div",
    { class: "worst-box" },
    h("h3", null, `The ${Math.min(ROWS, scored.length)} tokens that differ most`),
    h(
      "table",
      { id: "worst-tokens", class: "data worst" },
      h("thead", null, h("tr", null, h("th", null, "#"), h("th", null, "chunk:pos"), h("th", null, "context [token]"), h("th", null, "top-1 A → B"), heads.kl, heads.dnll, heads.flip)),
      body,
    ),
  );
}
