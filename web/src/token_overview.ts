// The whole text at a glance, above the strip: one column per token (several tokens per column
// when there are more tokens than pixels: the column takes their largest KL), coloured on the
// strip's scale, with a dark mark on top where the top-1 prediction changed. Click or drag to
// go to a token.
import { h } from "./dom";
import { colourOf, type KlScale } from "./kl_scale";
import { isNum } from "./format";
import { isFlip, type StripToken } from "./token_strip";

const HEIGHT = 30;
const MARK = 7;

export interface Overview {
  el: HTMLElement;
  draw(scale: KlScale): void;
  resize(): void;
}

export function renderOverview(tokens: StripToken[], goTo: (i: number) => void): Overview {
  const canvas = h("canvas", { id: "kl-overview", class: "kl-overview", height: HEIGHT, role: "img" });
  canvas.setAttribute("aria-label", "KL of every token of the text, in reading order; click to go to a token");
  let scale: KlScale | null = null;
  const columnsOf = () => Math.max(1, Math.floor(canvas.clientWidth || 800));

  function draw(s: KlScale): void {
    scale = s;
    const cols = columnsOf();
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(cols * dpr);
    canvas.height = Math.round(HEIGHT * dpr);
    const ctx = canvas.getContext("2d");
    if (!ctx || tokens.length === 0) return;
    ctx.scale(dpr, dpr);
    const perCol = tokens.length / Math.min(cols, tokens.length);
    const colW = cols / Math.min(cols, tokens.length);
    const base = getComputedStyle(canvas).getPropertyValue("--overview-empty").trim() || "#eef0f3";
    const mark = getComputedStyle(canvas).getPropertyValue("--fg").trim() || "#111";
    for (let c = 0; c * perCol < tokens.length; c++) {
      let max = -1;
      let flip = false;
      for (let i = Math.floor(c * perCol); i < Math.min(tokens.length, Math.floor((c + 1) * perCol)); i++) {
        const p = tokens[i].p;
        if (p.scored && isNum(p.kl) && p.kl > max) max = p.kl;
        if (isFlip(p)) flip = true;
      }
      ctx.fillStyle = (max >= 0 ? colourOf(s, max) : null) ?? base;
      ctx.fillRect(c * colW, MARK, Math.max(1, colW), HEIGHT - MARK);
      if (flip) {
        ctx.fillStyle = mark;
        ctx.fillRect(c * colW, 0, Math.max(1, colW), MARK - 2);
      }
    }
  }

  const tokenAt = (x: number) => Math.max(0, Math.min(tokens.length - 1, Math.floor((x / Math.max(1, canvas.clientWidth)) * tokens.length)));
  let dragging = false;
  canvas.addEventListener("pointerdown", (ev) => {
    dragging = true;
    canvas.setPointerCapture(ev.pointerId);
    goTo(tokenAt(ev.offsetX));
  });
  canvas.addEventListener("pointermove", (ev) => {
    if (dragging) goTo(tokenAt(ev.offsetX));
  });
  canvas.addEventListener("pointerup", () => (dragging = false));

  const el = h(
    "div",
    { class: "overview-box" },
    canvas,
    h("div", { class: "muted small" }, `${tokens.length} tokens in reading order, coloured by KL; a dark mark above: the top-1 prediction changed. Click or drag to go there.`),
  );
  return { el, draw, resize: () => scale && draw(scale) };
}
