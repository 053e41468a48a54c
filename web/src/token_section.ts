// "Which tokens": the colour legend and its toggles, the overview bar, the worst tokens, the
// shaded text and the pinned token's panel, wired together.
import { h, onSchemeChange } from "./dom";
import { fmt } from "./format";
import { FIXED_LO, klScale, rampStops, type KlScale } from "./kl_scale";
import { renderOverview } from "./token_overview";
import { renderTokenPanel } from "./token_panel";
import { renderTokenStrip } from "./token_strip";
import { renderWorstTokens } from "./worst_tokens";
import type { Result } from "./types";

function legend(scale: KlScale): HTMLElement {
  const { gradient, ticks } = rampStops(scale);
  return h(
    "div",
    { class: "kl-legend", "data-lo": scale.lo, "data-hi": scale.hi },
    h("span", null, scale.unshadedBelow > FIXED_LO ? `KL ≤ floor ${fmt(scale.unshadedBelow, 2)}: unshaded` : `KL ≤ ${fmt(FIXED_LO, 1)}: unshaded`),
    h(
      "span",
      { class: "kl-ramp-box" },
      h("span", { class: "kl-ramp", style: `background: ${gradient}` }),
      h("span", { class: "kl-ticks" }, ...ticks.map((t) => h("span", { class: "kl-tick", style: `left: ${(t.at * 100).toFixed(1)}%` }, t.label))),
    ),
    h("span", null, scale.relative ? `${fmt(scale.hi, 3)} (this run's max)` : `(the same scale in every report)`),
    h("span", { class: "legend-sample" }, "unscored"),
  );
}

export function renderTokenSection(result: Result): { el: HTMLElement; mount(): void; resize(): void; dispose(): void } {
  let scale = klScale(result, false);
  const panel = renderTokenPanel(result);
  const strip = renderTokenStrip(result, scale, (i) => {
    panel.show(strip.tokens[i]);
  });
  const overview = renderOverview(strip.tokens, (i) => strip.goTo(i, false));
  const legendBox = h("div", { class: "legend-box" }, legend(scale));
  const relative = h("input", { type: "checkbox", id: "kl-relative" });
  relative.addEventListener("change", () => {
    scale = klScale(result, relative.checked);
    strip.recolour(scale);
    overview.draw(scale);
    legendBox.replaceChildren(legend(scale));
  });
  const flips = h("input", { type: "checkbox", id: "show-flips" });
  flips.addEventListener("change", () => strip.el.classList.toggle("show-flips", flips.checked));
  const el = h(
    "section",
    { class: "text-section" },
    h("h2", null, "Which tokens differ"),
    h(
      "div",
      { class: "strip-controls" },
      legendBox,
      h("label", null, relative, " colour relative to this run"),
      h("label", null, flips, " outline tokens where the top-1 prediction changed"),
    ),
    overview.el,
    h("details", { class: "worst-details", open: true }, h("summary", null, "Worst tokens"), renderWorstTokens(strip.tokens, (i) => strip.goTo(i, true))),
    h("div", { class: "strip-grid" }, strip.el, panel.el),
  );
  let unlisten: () => void = () => {};
  return {
    el,
    mount: () => {
      overview.draw(scale);
      unlisten = onSchemeChange(() => overview.draw(scale)); // the canvas keeps its colours
    },
    resize: () => overview.resize(),
    dispose: () => {
      unlisten();
      strip.dispose();
    },
  };
}
