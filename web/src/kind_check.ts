// A stored check's page (src/kinds/check/, `check ... -o FILE.hdy`): the verdict first, the
// first divergent tap named, then every tap's max |Δ| against its tolerance in forward order.
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { fmt } from "./format";
import { sortableTable } from "./sortable_table";
import type { Num } from "./types";

export interface CheckTap {
  name: string;
  max_abs: Num | "inf";
  mean_abs: Num | "inf";
  /** "inf": the reference's tap is zero and the candidate's is not (common/json_number.h). */
  rel_err: Num | "inf";
  tolerance: Num | "inf";
  over: boolean;
}

export interface CheckDoc {
  passed: boolean;
  first_divergent_tap: string | null;
  decode_steps: number;
  taps: CheckTap[];
}

/** A tap's number as a number to sort by ("inf" sorts as the largest; null: none). */
export const tapKey = (v: Num | "inf"): Num => (v === "inf" ? Infinity : v);
/** A tap's number as the tables show it (check writes +inf as "inf", common/json_number.h). */
export const tapText = (v: Num | "inf", digits = 4): string => (v === "inf" ? "inf" : fmt(v, digits));

export function renderCheck(root: HTMLElement, doc: CheckDoc): void {
  const over = doc.taps.filter((t) => t.over).length;
  root.append(
    doc.passed
      ? h("p", { class: "verdict ok-line", "data-passed": "true" }, `Passed: every tap within its tolerance (${doc.taps.length} taps, ${doc.decode_steps} decode steps).`)
      : h("p", { class: "verdict warn-line", "data-passed": "false" }, `FAILED: first divergent tap ${doc.first_divergent_tap ?? "?"}; ${over} of ${doc.taps.length} taps over their tolerance.`),
  );
  const order = new Map(doc.taps.map((t, i) => [t.name, i]));
  const table = sortableTable<CheckTap>(
    [
      { label: "#", numeric: true, key: (t) => order.get(t.name), cell: (t) => String((order.get(t.name) ?? 0) + 1), title: "forward order" },
      { label: "tap", key: (t) => t.name, cell: (t) => t.name },
      { label: "max |Δ|", numeric: true, key: (t) => tapKey(t.max_abs), cell: (t) => tapText(t.max_abs) },
      { label: "tolerance", numeric: true, key: (t) => tapKey(t.tolerance), cell: (t) => tapText(t.tolerance) },
      { label: "mean |Δ|", numeric: true, key: (t) => tapKey(t.mean_abs), cell: (t) => tapText(t.mean_abs) },
      { label: "rel err", numeric: true, key: (t) => tapKey(t.rel_err), cell: (t) => tapText(t.rel_err, 3) },
      { label: "over", key: (t) => (t.over ? 1 : 0), cell: (t) => (t.over ? h("strong", { class: "over" }, "OVER") : "within") },
    ],
    doc.taps,
    { class: "check-taps", rowAttrs: (t) => ({ "data-tap": t.name, "data-over": String(t.over) }) },
  );
  root.append(table.el);
}

registerKindView("check", renderCheck);
