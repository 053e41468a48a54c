// A length curve's page (src/kinds/length_curve/): at each prompt length, the last layer's
// relative error and the KL of the logits between the two arms, one row per length, so a step
// between two lengths (a ubatch or KV-padding boundary) reads down the table.
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { fmt, isNum } from "./format";
import { sortableTable } from "./sortable_table";
import type { Num } from "./types";

/** A number as the curve stores it: "inf" where it is infinite (common/json_number.h). */
type Value = Num | "inf";

interface LengthRow {
  length: number;
  rel_err: Value; // null: the model has no proven last-layer residual (not measured, not zero)
  max_abs: Value;
  mean_kl: Value; // "inf": B masks a token A gives mass at one of the positions
  max_kl: Value;
  top1_flips: number;
}

const sortKey = (v: Value): Num => (v === "inf" ? Infinity : v);
const shown = (v: Value): string => (v === "inf" ? "inf" : fmt(v));

export interface LengthCurveDoc {
  a?: { model?: string };
  b?: { model?: string };
  tokens: number;
  rows: LengthRow[];
}

export function renderLengthCurve(root: HTMLElement, doc: LengthCurveDoc): void {
  const measured = (v: Value) => (v === "inf" || isNum(v) ? shown(v) : h("span", { class: "muted", title: "the model has no proven last-layer residual" }, "not measured"));
  const cols = [
    { label: "length", numeric: true, key: (r: LengthRow) => r.length, cell: (r: LengthRow) => String(r.length) },
    { label: "rel err", numeric: true, key: (r: LengthRow) => sortKey(r.rel_err), cell: (r: LengthRow) => measured(r.rel_err), title: "||Δ|| / ||A|| of the last layer's residual over all positions" },
    { label: "max |Δ|", numeric: true, key: (r: LengthRow) => sortKey(r.max_abs), cell: (r: LengthRow) => measured(r.max_abs) },
    { label: "mean KL", numeric: true, key: (r: LengthRow) => sortKey(r.mean_kl), cell: (r: LengthRow) => shown(r.mean_kl), title: "KL(A || B) per position, mean over the length" },
    { label: "max KL", numeric: true, key: (r: LengthRow) => sortKey(r.max_kl), cell: (r: LengthRow) => shown(r.max_kl) },
    { label: "top-1 flips", numeric: true, key: (r: LengthRow) => r.top1_flips, cell: (r: LengthRow) => `${r.top1_flips} of ${r.length}` },
  ];
  root.append(h("p", { class: "length-curve-headline" }, `${doc.rows.length} prompt lengths, up to ${doc.tokens} tokens; each length runs from an empty cache as one batch`));
  root.append(sortableTable(cols, doc.rows, { class: "length-curve" }).el);
}

registerKindView("length-curve", renderLengthCurve);
