// The result view shared by the report file and the serve UI: arms, headline cards with
// their floor, plots, the shaded text and provenance.
import { analysesSection } from "./analyses";
import { h, integrityWarning, type Child } from "./dom";
import { baseName, fmt, fmtBytes, fmtFixed, fmtParams, fmtPct, fmtPm, isNum, DASH } from "./format";
import { makePlot, type PlotHandle } from "./plots";
import { componentSpec, klFloorHi, residualSpec, transplantSpec, type PlotSpec } from "./plot_specs";
import { renderTokenSection } from "./token_section";
import { waterfallSection } from "./waterfall";
import type { ArmFloor, ArmInfo, ComponentDirection, Interval, Num, Result, Summary } from "./types";

/** Renders into root (which must be in the document, so plots know their width).
 *  Returns a dispose function that frees charts and listeners. */
export function renderResult(root: HTMLElement, result: Result, downloads: HTMLElement): () => void {
  const s = result.summary;
  const strip = renderTokenSection(result);
  const floorHi = klFloorHi(s);
  const specs = [
    residualSpec(s),
    s.transplants ? transplantSpec(s.transplants, floorHi) : null,
    s.components?.denoise ? componentSpec(s.components.denoise, "denoise", floorHi) : null,
    s.components?.noise ? componentSpec(s.components.noise, "noise", floorHi) : null,
  ].filter((p): p is PlotSpec => p !== null);
  const plots: PlotHandle[] = specs.map(makePlot);

  root.append(
    h(
      "div",
      { class: "result" },
      integrityWarning(s.file, s.integrity),
      header(s),
      arms(s),
      cards(s),
      waterfallSection(s),
      percentiles(s),
      analysesSection(s),
      downloads,
      h("section", { class: "plots" }, h("h2", null, "Where the difference comes from"), s.floor ? h("p", { class: "muted small" }, "Grey band on each plot: the floor (the larger of A vs A′ and B vs B′, upper end of its interval)."): null, ...plots.map((p) => p.el), componentTotals(s)),
      strip.el,
      provenance(s),
    ),
  );
  for (const p of plots) p.mount();
  strip.mount();

  let timer = 0;
  const onResize = () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => {
      plots.forEach((p) => p.resize());
      strip.resize();
    }, 150);
  };
  window.addEventListener("resize", onResize);
  return () => {
    window.removeEventListener("resize", onResize);
    clearTimeout(timer);
    plots.forEach((p) => p.destroy());
    strip.dispose();
  };
}

function header(s: Summary): HTMLElement {
  const badge = (label: string, v: string | undefined, good: string) =>
    v ? h("span", { class: `badge ${v === good ? "ok" : "warn"}` }, `${label}: ${v}`) : null;
  return h(
    "div",
    { class: "result-header" },
    s.file ? h("span", { class: "file", title: s.file }, baseName(s.file)) : null,
    badge("status", s.status, "complete"),
    badge("integrity", s.integrity, "ok"),
    h("span", { class: "muted" }, `${isNum(s.n_scored) ? s.n_scored : DASH} scored tokens in ${isNum(s.n_chunks) ? s.n_chunks : DASH} chunks`),
  );
}

/** An arm's settings and facts: its config, with what provenance recorded over it. */
export function armInfo(s: Summary, which: "a" | "b"): ArmInfo {
  return { ...(s.config?.[which] ?? {}), ...(s.provenance?.arms?.[which] ?? {}) };
}

function arms(s: Summary): HTMLElement {
  const one = (which: "a" | "b") => {
    const a = armInfo(s, which);
    // B made by --b-quant is called what the user asked for ("a.gguf → Q4_K_M"); the file
    // heterodyne cached it in is a detail (the line under it, and the hover).
    const bQuant = which === "b" ? s.config?.b_quant : undefined;
    const title = bQuant ? `${baseName(armInfo(s, "a").model)} → ${bQuant}` : baseName(a.model);
    const quant = bQuant ? `A quantized to ${bQuant} by heterodyne, cached at ${a.model ?? DASH}` : null;
    const settings = [
      `K cache ${a.cache_type_k ?? DASH}`,
      `V cache ${a.cache_type_v ?? DASH}`,
      // As asked, and what llama.cpp ran where that differs ("auto→on"), as show prints it.
      `flash attn ${a.flash_attn ?? DASH}${a.runs_on?.flash_attn && a.runs_on.flash_attn !== a.flash_attn ? `→${a.runs_on.flash_attn}` : ""}`,
      `ubatch ${a.n_ubatch ?? DASH}`,
      `threads ${a.n_threads === 0 ? "default" : (a.n_threads ?? DASH)}`,
    ].join(" · ");
    const about = [a.model_description, a.architecture, isNum(a.n_params) ? `${fmtParams(a.n_params)} params` : null, isNum(a.model_size) ? fmtBytes(a.model_size) : null]
      .filter((x) => x)
      .join(" · ");
    return h(
      "div",
      { class: `arm arm-${which}` },
      h("div", { class: "arm-label" }, which.toUpperCase()),
      h("div", { class: "arm-model", title: a.model ?? "" }, title),
      quant ? h("div", { class: "arm-quant" }, quant) : null,
      about ? h("div", { class: "muted" }, about) : null,
      h("div", { class: "arm-settings" }, settings),
    );
  };
  return h("section", { class: "arms" }, one("a"), one("b"));
}

function hasFloor(s: Summary): boolean {
  return !!s.floor || isNum(s.floor_kl_mean);
}

function floorBitwise(s: Summary): boolean {
  return !!s.floor?.bitwise_identical;
}

/** One arm's floor, as show prints it: "0 (bitwise)" or the value. */
function armFloor(f: ArmFloor | null | undefined, get: (f: ArmFloor) => string): string {
  if (!f) return "not measured";
  return f.bitwise_identical ? "0 (bitwise)" : get(f);
}

/** What a figure's interval says against 0 and the floor (same wording as show and --json). */
function standing(notes: string[] | undefined): HTMLElement | null {
  return notes && notes.length ? h("div", { class: "card-standing" }, notes.join("; ")) : null;
}

function cards(s: Summary): HTMLElement {
  const floorNote = (text: () => string) => (hasFloor(s) ? text() : "no floor");
  const fl = s.floor ?? {};
  const card = (label: string, value: string, ci: string | null, floor: string, says: HTMLElement | null = null) =>
    h("div", { class: "card" }, h("div", { class: "card-label" }, label), h("div", { class: "card-value" }, value, ci ? h("span", { class: "card-ci" }, ` ± ${ci}`) : null), h("div", { class: "card-floor" }, floor), says);
  const ci = (v: Num, f: (x: Num) => string) => (isNum(v) ? f(v) : null);
  const arms = (get: (f: ArmFloor) => string) => `A vs A′ ${armFloor(s.floor_a, get)}, B vs B′ ${armFloor(s.floor_b, get)}`;
  return h(
    "section",
    { class: "headline" },
    h(
      "div",
      { class: "cards" },
      card(
        "mean KL(A‖B)",
        fmt(s.kl_mean),
        ci(s.kl_ci95, fmt),
        floorNote(() => `floor ${floorBitwise(s) ? "0 (bitwise)" : fmtPm(s.floor_kl_mean, s.floor_kl_ci95)} (${arms((f) => fmtPm(f.kl_mean, f.kl_ci95))})`),
        standing(s.standing?.kl),
      ),
      card(
        "top-1 change rate",
        // The rate and its interval inside [0, 1], in show's words ("0 of 1,204 positions").
        s.top1_change?.text ?? fmtPct(s.top1_change_rate),
        null,
        floorNote(() => `floor ${floorBitwise(s) ? "0 (bitwise)" : fmtPct(s.floor_top1_change_rate)} (${arms((f) => fmtPct(f.top1_change_rate))})`),
        standing(s.standing?.top1_change),
      ),
      // Over a sample of the chunks, the re-split PPL is read beside the arm's own on those chunks.
      card("PPL A", fmtFixed(s.ppl_a, 3), null, floorNote(() => `floor: A re-split (A′) ${fmtFixed(fl.ppl_a_resplit, 3)}${onFloorChunks("A", fl.ppl_a_on_floor_chunks)}`)),
      card("PPL B", fmtFixed(s.ppl_b, 3), null, floorNote(() => (s.floor_b ? `floor: B re-split (B′) ${fmtFixed(fl.ppl_b_resplit, 3)}${onFloorChunks("B", fl.ppl_b_on_floor_chunks)}` : "floor: B re-split not measured"))),
    ),
    s.intervals_note ? h("p", { class: "intervals-note" }, s.intervals_note) : null,
    s.infinite_note ? h("p", { class: "intervals-note" }, s.infinite_note) : null,
    s.floor_coverage_note ? h("p", { class: "intervals-note floor-coverage" }, s.floor_coverage_note) : null,
    s.floor_splits_note ? h("p", { class: "intervals-note" }, s.floor_splits_note) : null,
    h(
      "p",
      { class: "muted small" },
      hasFloor(s)
        ? "± is the 95 % interval (chunks as clusters). The floor is each arm against itself with a different batch split (A vs A′, B vs B′), the larger of the two: the numerical noise a real difference must exceed."
        : "± is the 95 % interval (chunks as clusters). This run has no floor (A against itself), so there is no noise level to compare with.",
    ),
  );
}

function pctRank(label: string): number {
  if (label === "min") return -1;
  if (label === "median") return 50;
  if (label === "max") return 101;
  const v = parseFloat(label);
  return Number.isFinite(v) ? v : 200;
}

function percentiles(s: Summary): HTMLElement | null {
  const p = s.kl_percentiles;
  if (!p || Object.keys(p).length === 0) return null;
  const keys = Object.keys(p).sort((a, b) => pctRank(a) - pctRank(b));
  return h(
    "section",
    { class: "percentiles" },
    h("h2", null, "Per-token KL distribution"),
    h(
      "table",
      { class: "data" },
      h("thead", null, h("tr", null, ...keys.map((k) => h("th", null, k)))),
      h("tbody", null, h("tr", null, ...keys.map((k) => h("td", null, fmt(p[k], 3))))),
    ),
  );
}

function fmtInterval(iv: Interval | undefined): string {
  return iv ? `[${fmt(iv[0], 3)}, ${fmt(iv[1], 3)}]` : "";
}

function componentTotals(s: Summary): HTMLElement | null {
  const c = s.components;
  if (!c) return null;
  const dirs = (["denoise", "noise"] as const).filter((d) => c[d]);
  const row = (label: string, f: (d: ComponentDirection) => Child) => h("tr", null, h("th", null, label), ...dirs.map((d) => h("td", null, f(c[d] as ComponentDirection))));
  const val = (v: Num, iv?: Interval, says?: string[]) => `${fmt(v, 3)} ${fmtInterval(iv)}${says && says.length ? ` (${says.join("; ")})` : ""}`;
  return h(
    "details",
    { class: "component-totals", open: true },
    h("summary", null, "Component totals (mean [95 % interval])"),
    h(
      "table",
      { class: "data" },
      h("thead", null, h("tr", null, h("th", null, ""), ...dirs.map((d) => h("th", null, d)))),
      h(
        "tbody",
        null,
        row("untouched KL", (d) => fmt(d.untouched, 3)),
        row("embedding", (d) => val(d.embedding, d.embedding_ci95, d.embedding_standing)),
        row("attention total", (d) => val(d.attention_total, d.attention_total_ci95, d.attention_total_standing)),
        row("MLP total", (d) => val(d.mlp_total, d.mlp_total_ci95, d.mlp_total_standing)),
        row("attention − MLP (paired)", (d) => val(d.paired_diff, d.paired_diff_ci95)),
        row("attention share per chunk", (d) => `${fmtPct(d.attention_share_min, 1)} – ${fmtPct(d.attention_share_max, 1)}`),
        row("final norm + head", (d) => fmt(d.final, 3)),
      ),
    ),
  );
}

function provenance(s: Summary): HTMLElement {
  const p = s.provenance ?? {};
  const rows: [string, string][] = [];
  const add = (k: string, v: unknown) => {
    if (v !== undefined && v !== null && v !== "") rows.push([k, String(v)]);
  };
  add("command line", p.command_line);
  add("text", p.text?.path ?? s.config?.text_file);
  add("text bytes", p.text?.bytes);
  add("tokens", p.tokens?.count);
  add("chunk", s.config?.chunk);
  add("score from", s.config?.score_from);
  add("started", p.started_at);
  add("finished", p.finished_at);
  add("heterodyne", p.heterodyne ? `${p.heterodyne.version ?? ""} ${p.heterodyne.commit ?? ""}`.trim() : undefined);
  add("llama.cpp", p.llama_cpp?.commit);
  for (const w of ["a", "b"] as const) add(`model ${w.toUpperCase()} sha256`, p.arms?.[w]?.model_sha256);
  const layers = s.layers ?? [];
  return h(
    "section",
    { class: "provenance" },
    layers.length
      ? h(
          "details",
          null,
          h("summary", null, "Per-layer residual numbers"),
          h(
            "table",
            { class: "data" },
            h("thead", null, h("tr", null, ...["layer", "rel. error", "cosine", "max |b − a|", "floor rel. error", "A vs A′", "B vs B′", "against the floor"].map((t) => h("th", null, t)))),
            h(
              "tbody",
              null,
              ...layers.map((l) =>
                h(
                  "tr",
                  null,
                  h("td", null, l.layer),
                  h("td", null, fmtPm(l.rel_err_mean, l.rel_err_ci95, (v) => fmt(v, 3))),
                  h("td", null, fmt(l.cosine_mean, 6)),
                  h("td", null, fmt(l.max_abs, 4)),
                  h("td", null, fmt(l.floor_rel_err_mean, 3)),
                  h("td", null, fmt(l.floor_a_rel_err_mean, 3)),
                  h("td", null, fmt(l.floor_b_rel_err_mean, 3)),
                  h("td", null, (l.standing ?? []).join("; ")),
                ),
              ),
            ),
          ),
        )
      : null,
    h("details", null, h("summary", null, "Provenance"), h("table", { class: "data kv" }, h("tbody", null, ...rows.map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))))),
  );
}

// ", A on its 4 chunks 69.8" where the floor covers a sample of the run's chunks; "" otherwise.
function onFloorChunks(arm: string, ppl: Num | undefined): string {
  return ppl === undefined || ppl === null ? "" : `; ${arm} on its chunks ${fmtFixed(ppl, 3)}`;
}
