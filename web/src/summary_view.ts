// The view of an experiment that is not a diff (a sweep, a floor exploration): its kind, status
// and integrity, and the text `heterodyne show` prints for it, as is. Such a document is
// {kind, text, path, status, integrity, <kind>: {...}} (report/experiment_views.h).
import { h } from "./dom";
import type { ResultDoc, SummaryResult } from "./types";

export function isSummaryResult(doc: ResultDoc): doc is SummaryResult {
  return typeof (doc as SummaryResult).kind === "string" && (doc as SummaryResult).kind !== "diff" && typeof (doc as SummaryResult).text === "string";
}

export function renderSummaryResult(root: HTMLElement, doc: SummaryResult, downloads: HTMLElement): void {
  const integrity = doc.integrity === "MISMATCH" ? "fails its integrity check (changed after it was sealed)" : (doc.integrity ?? "");
  root.append(
    h(
      "div",
      { class: "result summary-result" },
      h("h2", null, `A ${doc.kind}`),
      h("p", { class: "muted" }, `status: ${doc.status ?? "unknown"} · integrity: ${integrity}`),
      h("pre", { class: "mono show-text" }, doc.text),
      downloads,
    ),
  );
}
