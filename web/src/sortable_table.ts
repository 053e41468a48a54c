// A table whose column headers sort it (click or Enter; again to reverse), as every list of
// runs, combinations or groups in the UI is: the reader asks "which is worst" by sorting.
// Missing values sort last in both directions.
import { h, clear, type Child } from "./dom";
import { isNum } from "./format";

export interface Column<R> {
  label: string;
  /** What the column sorts by; undefined: not sortable. */
  key?: (r: R) => number | string | null | undefined;
  cell: (r: R) => Child;
  /** Numbers are right-aligned and sort largest first on the first click. */
  numeric?: boolean;
  title?: string;
}

export interface SortableTable<R> {
  el: HTMLTableElement;
  /** Sorts by column i (its index in columns); descending when desc. */
  sortBy(i: number, desc: boolean): void;
  rows(): R[];
}

function compare(a: number | string | null | undefined, b: number | string | null | undefined): number {
  const missingA = a === null || a === undefined || (typeof a === "number" && !isNum(a));
  const missingB = b === null || b === undefined || (typeof b === "number" && !isNum(b));
  if (missingA || missingB) return missingA === missingB ? 0 : missingA ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

export function sortableTable<R>(
  columns: Column<R>[],
  data: R[],
  opts: { class?: string; rowAttrs?: (r: R) => Record<string, string | number> } = {},
): SortableTable<R> {
  let order = [...data];
  const body = h("tbody");
  const heads = columns.map((c, i) =>
    h(
      "th",
      { scope: "col", class: c.numeric ? "num" : undefined, title: c.title },
      c.key
        ? h("button", { type: "button", class: "sort-button", "data-col": i, onclick: () => toggle(i) }, c.label)
        : c.label,
    ),
  );
  const el = h("table", { class: `data sortable ${opts.class ?? ""}`.trim() }, h("thead", null, h("tr", null, ...heads)), body);
  let current = -1;
  let desc = false;

  const draw = () => {
    clear(body);
    for (const r of order) {
      const attrs = opts.rowAttrs ? opts.rowAttrs(r) : {};
      body.append(h("tr", attrs, ...columns.map((c) => h("td", { class: c.numeric ? "num" : undefined }, c.cell(r)))));
    }
  };
  function sortBy(i: number, descending: boolean): void {
    const key = columns[i]?.key;
    if (!key) return;
    current = i;
    desc = descending;
    const sign = desc ? -1 : 1;
    // Stable, and missing values stay last whichever way the column runs.
    order = [...data].sort((x, y) => {
      const a = key(x), b = key(y);
      const c = compare(a, b);
      const missing = (v: typeof a) => v === null || v === undefined || (typeof v === "number" && !isNum(v));
      return missing(a) || missing(b) ? c : sign * c;
    });
    heads.forEach((th, j) => {
      if (j === current) th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    });
    draw();
  }
  function toggle(i: number): void {
    sortBy(i, i === current ? !desc : columns[i].numeric === true);
  }
  draw();
  return { el, sortBy, rows: () => order };
}
