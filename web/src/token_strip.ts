// The text of every chunk, one <span class="tok"> per position, shaded by KL(A‖B) on the scale
// of kl_scale.ts. Built in one DocumentFragment and driven by delegated listeners, so 20 000
// tokens cost one layout and no per-token closures. The strip is one tab stop: arrow keys move
// a cursor over the scored tokens, Enter pins the token under it (token_panel.ts).
import { h } from "./dom";
import { colourOf, type KlScale } from "./kl_scale";
import { fillTip, placeTip } from "./token_tip";
import type { Position, Result, TopEntry } from "./types";

/** One token of the strip: where it is in the result and its element. */
export interface StripToken {
  chunk: number;
  p: Position;
  el: HTMLElement;
}

export interface TokenStrip {
  el: HTMLElement;
  tokens: StripToken[];
  recolour(scale: KlScale): void;
  /** Scrolls to token i, moves the keyboard cursor there and, with pin, pins it. */
  goTo(i: number, pin: boolean): void;
  dispose(): void;
}

export function top1(list: TopEntry[] | undefined): string | undefined {
  return list && list.length > 0 ? list[0][0] : undefined;
}

export function isFlip(p: Position): boolean {
  const ta = top1(p.top_a);
  return p.scored && ta !== undefined && ta !== top1(p.top_b);
}

function tokenSpan(chunk: number, p: Position, i: number): HTMLElement {
  const span = document.createElement("span");
  let cls = "tok";
  const text = typeof p.text === "string" ? p.text : "";
  if (!p.scored) cls += " unscored";
  else if (isFlip(p)) cls += " flip";
  if (text.includes("\n")) cls += " nl";
  if (text === "") cls += " empty";
  span.className = cls;
  span.dataset.chunk = String(chunk);
  span.dataset.pos = String(p.pos);
  span.dataset.i = String(i);
  span.textContent = text;
  return span;
}

export function renderTokenStrip(result: Result, scale: KlScale, onPin: (i: number) => void): TokenStrip {
  const strip = h("div", {
    id: "kl-strip",
    class: "kl-strip",
    tabindex: 0,
    role: "listbox",
    "aria-label": "text of the run, one token per element: arrow keys move, Enter pins a token",
  });
  const tip = h("div", { id: "tok-tip", class: "tok-tip", hidden: true, role: "tooltip" });
  const tokens: StripToken[] = [];
  const frag = document.createDocumentFragment();
  result.chunks.forEach((c, ci) => {
    if (ci > 0) frag.appendChild(h("span", { class: "chunk-sep" }, `chunk ${c.chunk}`));
    for (const p of c.positions) {
      const el = tokenSpan(c.chunk, p, tokens.length);
      tokens.push({ chunk: c.chunk, p, el });
      frag.appendChild(el);
    }
  });
  strip.appendChild(frag);

  const recolour = (s: KlScale) => {
    for (const t of tokens) {
      const colour = t.p.scored ? colourOf(s, t.p.kl) : null;
      t.el.style.backgroundColor = colour ?? "";
      t.el.classList.toggle("shaded", colour !== null);
    }
  };
  recolour(scale);

  const indexOf = (el: Element | null): number => (el instanceof HTMLElement && el.dataset.i ? Number(el.dataset.i) : -1);
  let hovered = -1;
  strip.addEventListener("mouseover", (ev) => {
    const i = indexOf((ev.target as Element).closest(".tok"));
    if (i === hovered) return;
    if (i < 0 || !tokens[i].p.scored) return hide();
    hovered = i;
    fillTip(tip, tokens[i].p, tokens[i].chunk);
    placeTip(tip, tokens[i].el);
  });
  strip.addEventListener("mouseleave", hide);
  strip.addEventListener("click", (ev) => {
    const i = indexOf((ev.target as Element).closest(".tok"));
    if (i >= 0 && tokens[i].p.scored) goTo(i, true);
  });
  // A fixed tooltip would drift away from its token on scroll.
  window.addEventListener("scroll", hide, { passive: true });
  function hide(): void {
    hovered = -1;
    tip.hidden = true;
  }

  let cursor = -1;
  function goTo(i: number, pin: boolean): void {
    if (i < 0 || i >= tokens.length) return;
    if (cursor >= 0) {
      tokens[cursor].el.classList.remove("cursor");
      tokens[cursor].el.removeAttribute("id");
      tokens[cursor].el.removeAttribute("aria-selected");
    }
    cursor = i;
    const el = tokens[i].el;
    el.classList.add("cursor");
    el.id = "tok-cursor";
    el.setAttribute("role", "option");
    el.setAttribute("aria-selected", "true");
    strip.setAttribute("aria-activedescendant", "tok-cursor");
    el.scrollIntoView({ block: "nearest", inline: "nearest" });
    if (pin) onPin(i);
  }
  const step = (from: number, dir: number): number => {
    for (let i = from + dir; i >= 0 && i < tokens.length; i += dir) if (tokens[i].p.scored) return i;
    return from;
  };
  strip.addEventListener("keydown", (ev) => {
    const moves: Record<string, () => number> = {
      ArrowRight: () => step(cursor, 1),
      ArrowDown: () => step(cursor, 1),
      ArrowLeft: () => step(cursor < 0 ? tokens.length : cursor, -1),
      ArrowUp: () => step(cursor < 0 ? tokens.length : cursor, -1),
      Home: () => step(-1, 1),
      End: () => step(tokens.length, -1),
    };
    if (moves[ev.key]) {
      ev.preventDefault();
      goTo(moves[ev.key](), false);
    } else if ((ev.key === "Enter" || ev.key === " ") && cursor >= 0) {
      ev.preventDefault();
      onPin(cursor);
    }
  });
  strip.addEventListener("focus", () => {
    if (cursor < 0) goTo(step(-1, 1), false);
  });

  const el = h("div", { class: "strip-box" }, strip, tip);
  return { el, tokens, recolour, goTo, dispose: () => window.removeEventListener("scroll", hide) };
}
