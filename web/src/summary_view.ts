// The view of an experiment that is not a diff (a sweep, a floor exploration, a recipe, a gate
// reference): its
// kind's own page (kind_*.ts, registered in kind_views.ts, so a new kind adds its file) above the text
// `heterodyne show` prints for it, as is. Such a document is
// {kind, text, path, status, integrity, <kind>: {...}} (kinds/views.h).
import { errorBox, errorMessage, h, integrityWarning } from "./dom";
import { kindView } from "./kind_views";
import type { PlotHandle } from "./plots";
import type { ResultDoc, SummaryResult } from "./types";

export function isSummaryResult(doc: ResultDoc): doc is SummaryResult {
  // A diff's document has neither (report/result.h); every other kind's has both.
  return typeof (doc as SummaryResult).kind === "string" && typeof (doc as SummaryResult).text === "string";
}

/** Renders into root (in the document); returns the dispose function for its charts. */
export function renderSummaryResult(root: HTMLElement, doc: SummaryResult, downloads: HTMLElement): () => void {
  const integrity = doc.integrity === "MISMATCH" ? "fails its integrity check (changed after it was sealed)" : (doc.integrity ?? "");
  const page = h("div", { class: "kind-page" });
  root.append(
    h(
      "div",
      { class: `result summary-result kind-${doc.kind}` },
      integrityWarning(doc.path, doc.integrity),
      h("h2", null, `A ${doc.kind}`),
      h("p", { class: doc.integrity === "MISMATCH" ? "warn-line" : "muted" }, `status: ${doc.status ?? "unknown"} · integrity: ${integrity}`),
      page,
      h("h3", null, doc.text_title ?? "As heterodyne show prints it"),
      h("pre", { class: "mono show-text" }, doc.text),
      downloads,
    ),
  );
  let plots: PlotHandle[] = [];
  const view = kindView(doc.kind);
  const body = (doc as unknown as Record<string, unknown>)[doc.kind];
  if (view && body && typeof body === "object") {
    try {
      plots = view(page, body as never) ?? [];
      plots.forEach((p) => p.mount());
    } catch (e) {
      // A file from an older heterodyne may lack a field the page draws: the text still stands.
      page.append(errorBox(`Could not draw this ${doc.kind}'s charts: ${errorMessage(e)}`));
    }
  }
  const onResize = () => plots.forEach((p) => p.resize());
  window.addEventListener("resize", onResize);
  return () => {
    window.removeEventListener("resize", onResize);
    plots.forEach((p) => p.destroy());
  };
}
