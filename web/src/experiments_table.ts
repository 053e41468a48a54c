// serve's list of experiments: newest first, every column sortable, diffs selectable for the
// compare page (#/compare/NAME,NAME,…).
import { experimentHash } from "./api";
import { h } from "./dom";
import { baseName, fmt, fmtPct, fmtPm, fmtFixed, fmtTime, isNum, DASH } from "./format";
import { sortableTable } from "./sortable_table";
import type { ExperimentInfo } from "./types";

export function modifiedKey(e: ExperimentInfo): number {
  const m = e.modified;
  if (typeof m === "number") return m < 1e12 ? m * 1000 : m;
  const t = m ? Date.parse(m) : NaN;
  return Number.isNaN(t) ? 0 : t;
}

export function compareHash(names: string[]): string {
  return `#/compare/${names.map(encodeURIComponent).join(",")}`;
}

/** What the list says beside a name: the kind when not a diff, a part of a sharded run, or a merged file. */
export function kindNote(e: ExperimentInfo): string {
  if (e.shard) return `part ${e.shard}`;
  if (isNum(e.merged_parts)) return `merged from ${e.merged_parts} parts`;
  return e.kind && !e.positions ? e.kind : "";
}

export function experimentsTable(list: ExperimentInfo[]): HTMLElement {
  if (list.length === 0) return h("p", { class: "muted" }, "No experiments yet: start a run above.");
  const selected = new Set<string>();
  const button = h("button", { type: "button", class: "compare-button", disabled: true }, "Compare selected");
  const update = () => {
    button.disabled = selected.size < 2;
    button.textContent = `Compare selected (${selected.size})`;
  };
  button.addEventListener("click", () => {
    // In the table's order, so the compare page lists them as the user sorted them.
    location.hash = compareHash(table.rows().filter((e) => selected.has(e.name)).map((e) => e.name));
  });
  const pick = (e: ExperimentInfo) => {
    const diff = e.positions === true;
    const box = h("input", { type: "checkbox", class: "pick", "aria-label": `select ${e.name}`, disabled: !diff || e.status !== "complete", title: diff ? "select to compare" : "only diffs are compared" });
    box.checked = selected.has(e.name);
    box.addEventListener("change", () => {
      if (box.checked) selected.add(e.name);
      else selected.delete(e.name);
      update();
    });
    return box;
  };
  const table = sortableTable<ExperimentInfo>(
    [
      { label: "", cell: pick },
      { label: "experiment", key: (e) => e.name, cell: (e) => h("span", null, h("a", { href: experimentHash(e.name), class: "experiment-link" }, e.name), kindNote(e) ? h("span", { class: "muted kind" }, ` (${kindNote(e)})`) : null) },
      { label: "status", key: (e) => e.status, cell: (e) => e.status ?? DASH },
      { label: "mean KL ± CI95", numeric: true, key: (e) => e.kl_mean, cell: (e) => fmtPm(e.kl_mean, e.kl_ci95) },
      { label: "floor KL", numeric: true, key: (e) => e.floor_kl_mean, cell: (e) => (e.floor_kl_mean === 0 ? "0 (bitwise)" : fmt(e.floor_kl_mean)) },
      { label: "top-1 change", numeric: true, key: (e) => e.top1_change_rate, cell: (e) => fmtPct(e.top1_change_rate) },
      { label: "PPL A", numeric: true, key: (e) => e.ppl_a, cell: (e) => fmtFixed(e.ppl_a, 3) },
      { label: "PPL B", numeric: true, key: (e) => e.ppl_b, cell: (e) => fmtFixed(e.ppl_b, 3) },
      { label: "B bpw", numeric: true, key: (e) => e.b_bpw, cell: (e) => fmt(e.b_bpw, 4) },
      { label: "chunks", numeric: true, key: (e) => e.n_chunks, cell: (e) => (isNum(e.n_chunks) ? String(e.n_chunks) : DASH) },
      { label: "A", key: (e) => baseName(e.a), cell: (e) => h("span", { title: e.a ?? "" }, baseName(e.a)) },
      { label: "B", key: (e) => baseName(e.b), cell: (e) => h("span", { title: e.b ?? "" }, baseName(e.b)) },
      { label: "modified", numeric: true, key: (e) => modifiedKey(e), cell: (e) => fmtTime(e.modified) },
    ],
    list,
    { class: "experiments", rowAttrs: (e) => ({ "data-name": e.name }) },
  );
  // Newest first: the one just finished is what the user wants.
  table.sortBy(12, true);
  update();
  return h("div", { class: "experiments-box" }, h("div", { class: "table-actions" }, button, h("span", { class: "muted small" }, " Select two or more diffs; click a column to sort.")), table.el);
}
