// A recommend run's page (src/kinds/recommend/, docs/recommend.md): the held-out ladder with
// the recipe among the stock types, the groups it moved, its rounds, and every measured
// variant, sortable.
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { fmt, fmtPct, isNum } from "./format";
import { ladderChart, type LadderEntry } from "./ladder";
import { sortableTable } from "./sortable_table";
import type { Num } from "./types";

interface HeldOutRow {
  name: string;
  bytes: number;
  bpw: Num;
  kl_mean: Num;
  kl_ci95: Num;
  top1_change: Num;
  top1_change_lo?: Num;
  top1_change_hi?: Num;
  ppl_b?: Num;
  floor_kl?: Num;
}

interface Group {
  group: string;
  base: string;
  start: string;
  type: string;
  bytes: number;
  delta_kl: Num;
  /** From the stock base file, as round 0 measured it (null where it has none). */
  delta_kl_from_base?: Num;
}

interface Variant {
  round: number;
  group: string;
  type: string;
  bytes: number;
  status: string;
  kl_calibration: Num;
  kl_held_out: Num;
}

export interface RecommendDoc {
  base: string;
  target: { size?: string; bytes?: number; kl?: Num };
  target_met?: boolean;
  base_kl_calibration?: Num;
  groups: Group[];
  predicted?: { file_bytes?: number; kl_calibration?: Num };
  measured?: { file_bytes?: number; kl_calibration?: Num };
  rounds?: { start_kl_calibration: Num; predicted_kl_calibration: Num; measured_kl_calibration: Num }[];
  rank_correlation?: { spearman: Num; variants: number };
  held_out: HeldOutRow[];
  sensitivity?: Variant[];
  /** The stock model of the recipe's size (held_out's name), null where none is. */
  stock_at_size?: string | null;
}

function heldOutTable(rows: HeldOutRow[]): HTMLElement {
  return sortableTable<HeldOutRow>(
    [
      { label: "model", key: (r) => r.name, cell: (r) => r.name },
      { label: "bytes", numeric: true, key: (r) => r.bytes, cell: (r) => String(r.bytes) },
      { label: "bpw", numeric: true, key: (r) => r.bpw, cell: (r) => fmt(r.bpw, 4) },
      { label: "mean KL ± 95 %", numeric: true, key: (r) => r.kl_mean, cell: (r) => `${fmt(r.kl_mean)} ± ${fmt(r.kl_ci95, 2)}` },
      { label: "top-1 change", numeric: true, key: (r) => r.top1_change, cell: (r) => fmtPct(r.top1_change) },
      { label: "PPL B", numeric: true, key: (r) => r.ppl_b, cell: (r) => fmt(r.ppl_b, 6) },
      { label: "floor KL", numeric: true, key: (r) => r.floor_kl, cell: (r) => fmt(r.floor_kl, 3) },
    ],
    rows,
    { class: "held-out", rowAttrs: (r) => ({ "data-name": r.name }) },
  ).el;
}

function signed(v: Num | undefined): string {
  return isNum(v) ? (v >= 0 ? "+" : "") + fmt(v) : "n/a";
}

function groupsTable(groups: Group[]): HTMLElement {
  const moved = groups.filter((g) => g.type !== g.base);
  if (moved.length === 0) return h("p", { class: "muted" }, "No group moved: the base is the best recipe for this target.");
  return sortableTable<Group>(
    [
      { label: "group", key: (g) => g.group, cell: (g) => g.group },
      { label: "base", key: (g) => g.base, cell: (g) => g.base },
      { label: "start", key: (g) => g.start, cell: (g) => g.start },
      { label: "type", key: (g) => g.type, cell: (g) => g.type },
      { label: "bytes", numeric: true, key: (g) => g.bytes, cell: (g) => String(g.bytes) },
      { label: "ΔKL from base", numeric: true, key: (g) => g.delta_kl_from_base ?? null, cell: (g) => signed(g.delta_kl_from_base) },
      // A group the last round's start already gave its type moved nothing from there.
      { label: "ΔKL from start", numeric: true, key: (g) => g.delta_kl, cell: (g) => (g.type === g.start ? "(the start's)" : signed(g.delta_kl)) },
    ],
    moved,
    { class: "groups" },
  ).el;
}

function variantsTable(rows: Variant[]): HTMLElement {
  return sortableTable<Variant>(
    [
      { label: "round", numeric: true, key: (v) => v.round, cell: (v) => String(v.round) },
      { label: "group", key: (v) => v.group, cell: (v) => v.group },
      { label: "type", key: (v) => v.type, cell: (v) => v.type },
      { label: "bytes", numeric: true, key: (v) => v.bytes, cell: (v) => String(v.bytes) },
      { label: "status", key: (v) => v.status, cell: (v) => v.status },
      { label: "KL calibration", numeric: true, key: (v) => v.kl_calibration, cell: (v) => fmt(v.kl_calibration) },
      { label: "KL held-out", numeric: true, key: (v) => v.kl_held_out, cell: (v) => fmt(v.kl_held_out) },
    ],
    rows,
    { class: "variants" },
  ).el;
}

/** The stock model the recipe is read against: the one the server named (stock_at_size, chosen
 *  in recommend_view.cpp as show chooses it). */
function sameSizeStock(r: RecommendDoc): HeldOutRow | null {
  if (!r.stock_at_size) return null;
  return r.held_out.slice(1).find((x) => x.name === r.stock_at_size) ?? null;
}

/** What the page is for, first: the recipe's held-out KL against the stock type of its size,
 *  its size, and the command that makes it. */
function lead(r: RecommendDoc): HTMLElement | null {
  const recipe = r.held_out[0];
  if (!recipe) return null;
  const stock = sameSizeStock(r);
  const ratio = stock && isNum(recipe.kl_mean) && isNum(stock.kl_mean) && stock.kl_mean > 0 ? recipe.kl_mean / stock.kl_mean : null;
  const mb = (b: number) => `${(b / 1e6).toFixed(2)} MB`;
  return h(
    "div",
    { class: "recommend-lead", "data-ratio": ratio === null ? "" : String(ratio) },
    h(
      "p",
      { class: "lead-kl" },
      stock
        ? `Held-out mean KL: the recipe ${fmt(recipe.kl_mean)} against ${stock.name} ${fmt(stock.kl_mean)}${ratio === null ? "" : ` (${fmt(ratio, 2)}×)`}.`
        : `Held-out mean KL of the recipe: ${fmt(recipe.kl_mean)}.`,
    ),
    h(
      "p",
      { class: "lead-size" },
      `The recipe: ${mb(recipe.bytes)}, ${fmt(recipe.bpw, 3)} bits per weight${stock ? `; ${stock.name}: ${mb(stock.bytes)}, ${fmt(stock.bpw, 3)}` : ""}.`,
    ),
  );
}

/** How to make the recipe's model with llama.cpp's own quantizer (tensor-types.txt is written
 *  beside report.hdy). */
function command(r: RecommendDoc): HTMLElement {
  return h(
    "p",
    { class: "recommend-command" },
    "Make it with llama.cpp: ",
    h("code", null, `llama-quantize --tensor-type-file tensor-types.txt MODEL-F16.gguf out.gguf ${r.base}`),
    " (tensor-types.txt is beside report.hdy).",
  );
}

export function renderRecommend(root: HTMLElement, r: RecommendDoc): void {
  const target = r.target.bytes !== undefined ? `size ${r.target.size ?? ""} (${r.target.bytes} bytes)` : `mean KL ${fmt(r.target.kl)} on the calibration text`;
  const entries: LadderEntry[] = r.held_out.map((row, i) => ({
    label: row.name,
    bpw: row.bpw,
    bytes: row.bytes,
    kl: row.kl_mean,
    kl_ci95: row.kl_ci95,
    top1: row.top1_change,
    top1_lo: row.top1_change_lo ?? null,
    top1_hi: row.top1_change_hi ?? null,
    floor: row.floor_kl, // the floor's mean: the held-out rows keep no interval for it
    highlight: i === 0, // the recipe comes first (src/kinds/recommend/recommend.cpp)
  }));
  const p = r.predicted ?? {}, m = r.measured ?? {};
  const off = isNum(p.kl_calibration) && isNum(m.kl_calibration) && m.kl_calibration !== 0 ? p.kl_calibration / m.kl_calibration - 1 : null;
  root.append(
    h(
      "section",
      { class: "kind-recommend" },
      lead(r),
      h("p", null, `Base ${r.base}, target ${target}${r.target_met === false ? " — not met: the least KL reached is shown" : ""}.`),
      h("p", null, `Predicted ${p.file_bytes ?? "?"} bytes, mean KL ${fmt(p.kl_calibration)}; measured ${m.file_bytes ?? "?"} bytes, mean KL ${fmt(m.kl_calibration)}${off === null ? "" : ` (the prediction ${(off * 100).toFixed(1)} % off)`}.`),
      r.rank_correlation ? h("p", null, `Spearman rank correlation of the variants' KL, calibration vs held-out: ${fmt(r.rank_correlation.spearman, 3)} over ${r.rank_correlation.variants} variants.`) : null,
      ladderChart(entries, "Held-out text: the recipe (red) among the stock types", "bits per weight of the tensors (8 × tensor bytes / weights)"),
      heldOutTable(r.held_out),
      h("h3", null, "Groups the recipe moves from the base"),
      groupsTable(r.groups),
      command(r),
      r.sensitivity?.length ? h("details", { class: "variants-box" }, h("summary", null, `Every measured variant (${r.sensitivity.length})`), variantsTable(r.sensitivity)) : null,
    ),
  );
}

registerKindView("recommend", renderRecommend);
