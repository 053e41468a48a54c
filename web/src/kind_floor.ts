// A floor exploration's page (src/kinds/floor/floor.cpp): one map per flash-attention setting, ubatch
// down and threads across, each cell "bitwise identical" or its KL on the one colour scale
// every report uses (kl_scale.ts), so a floor reads against the diffs it bounds.
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { fmt, fmtPct, isNum } from "./format";
import { colourOf, fixedScale } from "./kl_scale";
import { sortableTable } from "./sortable_table";
import type { Num } from "./types";

interface FloorRow {
  n_ubatch: number;
  n_threads: number;
  flash_attn: string;
  identical: boolean;
  positions_differing?: number;
  positions?: number;
  kl_mean?: Num;
  kl_max?: Num;
  top1_change_rate?: Num;
}

export interface FloorDoc {
  model: string;
  cache_type_k?: string;
  cache_type_v?: string;
  chunks?: number;
  chunk?: number;
  reference?: { n_ubatch?: number; n_threads?: number; flash_attn?: string };
  rows: FloorRow[];
  patterns?: { n_threads: number; flash_attn: string; summary: string; same_as_reference: boolean }[];
}

const uniq = <T>(xs: T[]) => [...new Set(xs)];

function cellFor(row: FloorRow | undefined, isReference: boolean): HTMLElement {
  if (!row) return h("td", { class: "floor-cell missing" }, "not run");
  const scale = fixedScale();
  // Below the scale's first decade a KL gets no shade, and then the page's own text colour.
  const shade = row.identical ? null : colourOf(scale, row.kl_mean);
  const attrs = {
    class: `floor-cell ${row.identical ? "identical" : shade ? "differs shaded" : "differs"}${isReference ? " reference" : ""}`,
    "data-ubatch": row.n_ubatch,
    "data-threads": row.n_threads,
    "data-fa": row.flash_attn,
    "data-kl": isNum(row.kl_mean) ? row.kl_mean : "",
    title: row.identical
      ? "bitwise identical to the reference ubatch"
      : `${row.positions_differing ?? "?"} of ${row.positions ?? "?"} positions differ; max KL ${fmt(row.kl_max)}; top-1 change ${fmtPct(row.top1_change_rate, 3)}`,
    style: shade ? `background:${shade}` : undefined,
  };
  return h("td", attrs, row.identical ? "≡ identical" : fmt(row.kl_mean, 3), isReference ? h("span", { class: "ref-mark" }, " (ref)") : null);
}

function floorMap(doc: FloorDoc, fa: string): HTMLElement {
  const rows = doc.rows.filter((r) => r.flash_attn === fa);
  const ubatches = uniq(rows.map((r) => r.n_ubatch)).sort((a, b) => a - b);
  const threads = uniq(rows.map((r) => r.n_threads)).sort((a, b) => a - b);
  const find = (u: number, t: number) => rows.find((r) => r.n_ubatch === u && r.n_threads === t);
  const ref = doc.reference ?? {};
  return h(
    "figure",
    { class: "floor-map", "data-fa": fa },
    h("figcaption", null, `flash attention ${fa}: mean KL against the same threads and flash attention at ubatch ${ref.n_ubatch ?? "?"}`),
    h(
      "table",
      { class: "data floor-grid" },
      h("thead", null, h("tr", null, h("th", { scope: "col" }, "ubatch \\ threads"), ...threads.map((t) => h("th", { scope: "col", class: "num" }, String(t))))),
      h(
        "tbody",
        null,
        ...ubatches.map((u) =>
          h("tr", null, h("th", { scope: "row", class: "num" }, String(u)), ...threads.map((t) => cellFor(find(u, t), u === ref.n_ubatch && t === ref.n_threads && fa === ref.flash_attn))),
        ),
      ),
    ),
  );
}

function rowsTable(doc: FloorDoc): HTMLElement {
  return sortableTable<FloorRow>(
    [
      { label: "ubatch", numeric: true, key: (r) => r.n_ubatch, cell: (r) => String(r.n_ubatch) },
      { label: "threads", numeric: true, key: (r) => r.n_threads, cell: (r) => String(r.n_threads) },
      { label: "fa", key: (r) => r.flash_attn, cell: (r) => r.flash_attn },
      { label: "bitwise", key: (r) => (r.identical ? 0 : 1), cell: (r) => (r.identical ? "identical" : `${r.positions_differing}/${r.positions} differ`) },
      { label: "mean KL", numeric: true, key: (r) => r.kl_mean, cell: (r) => fmt(r.kl_mean) },
      { label: "max KL", numeric: true, key: (r) => r.kl_max, cell: (r) => fmt(r.kl_max) },
      { label: "top-1 change", numeric: true, key: (r) => r.top1_change_rate, cell: (r) => fmtPct(r.top1_change_rate, 3) },
    ],
    doc.rows,
    { class: "floor-rows" },
  ).el;
}

/** The answer before the maps: which splits change no bit (every run at that ubatch, whatever
 *  its threads and flash attention, is bitwise the reference), and the smallest that changes
 *  the output, with its KL. */
function answer(doc: FloorDoc): HTMLElement {
  const ubatches = uniq(doc.rows.map((r) => r.n_ubatch)).sort((a, b) => a - b);
  const invariant = ubatches.filter((u) => doc.rows.filter((r) => r.n_ubatch === u).every((r) => r.identical));
  const changing = ubatches.filter((u) => !invariant.includes(u));
  const worst = (u: number) => {
    const kls = doc.rows.filter((r) => r.n_ubatch === u && !r.identical && isNum(r.kl_mean)).map((r) => r.kl_mean as number);
    return kls.length ? fmt(Math.max(...kls), 3) : "?";
  };
  const list = (us: number[]) => (us.length > 12 ? `${us.slice(0, 12).join(", ")}, … (${us.length} in all)` : us.join(", "));
  const text =
    ubatches.length === 0
      ? "No run of the exploration is stored yet."
      : changing.length === 0
      ? `No split changes a bit: every run, at all ${ubatches.length} ubatches tried, reproduces the reference bit for bit.`
      : invariant.length === 0
        ? `Every split tried changes the output; the smallest, ubatch ${changing[0]}, by a mean KL of up to ${worst(changing[0])}.`
        : `Splits that change no bit: ubatch ${list(invariant)}. The smallest split that changes the output: ubatch ${changing[0]} (mean KL up to ${worst(changing[0])}).`;
  return h("p", { class: "floor-answer", "data-invariant": invariant.join(","), "data-smallest-changing": changing.length ? String(changing[0]) : "" }, text);
}

export function renderFloor(root: HTMLElement, doc: FloorDoc): void {
  const fas = uniq(doc.rows.map((r) => r.flash_attn));
  root.append(
    h(
      "section",
      { class: "kind-floor" },
      answer(doc),
      h("p", null, `${doc.model.replace(/^.*[\\/]/, "")}, K ${doc.cache_type_k ?? "?"} / V ${doc.cache_type_v ?? "?"}, ${doc.chunks ?? "?"} chunk(s) of ${doc.chunk ?? "?"} tokens.`),
      h("div", { class: "floor-maps" }, ...fas.map((fa) => floorMap(doc, fa))),
      doc.patterns?.length
        ? h("ul", { class: "floor-patterns" }, ...doc.patterns.map((p) => h("li", null, `threads ${p.n_threads}, flash attention ${p.flash_attn}: ${p.summary}${p.same_as_reference ? "" : " (its run at the reference ubatch differs from the reference)"}`)))
        : null,
      h("h3", null, "Every run"),
      rowsTable(doc),
    ),
  );
}

registerKindView("floor", renderFloor);
