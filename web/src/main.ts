// Entry point of the one bundle behind both pages the C++ side writes:
//   window.HD_DATA = {...}  a self-contained report file (no network requests at all)
//   window.HD_SERVE = true  the local server UI
import { decodeResult } from "./decode";
import { downloadBlob, errorBox, errorMessage, h } from "./dom";
import { baseName } from "./format";
import { renderResult } from "./result_view";
import { startServeUI } from "./serve_ui";
import { isSummaryResult, renderSummaryResult } from "./summary_view";
import { renderCompare } from "./compare_view";
import { isCompareDoc, type CompareDoc, type Result, type ResultDoc } from "./types";

/** `heterodyne report a.hdy b.hdy …`: several diffs, compared (compare_view.ts). */
function comparePage(app: HTMLElement, doc: CompareDoc): void {
  const main = h("main", { class: "page" });
  app.append(h("header", { class: "top" }, h("span", { class: "brand" }, "heterodyne"), h("span", { class: "muted" }, "compare")), main);
  const runs = doc.runs.map((r) => ({ name: r.name, result: decodeResult(r.result) }));
  const bad = runs.find((r) => isSummaryResult(r.result) || !r.result.summary || !Array.isArray(r.result.chunks));
  if (bad) {
    main.append(errorBox(`'${bad.name}' is not a diff: only diffs are compared.`));
    return;
  }
  renderCompare(main, runs as { name: string; result: Result }[]);
}

function reportPage(app: HTMLElement, wire: ResultDoc | CompareDoc): void {
  if (isCompareDoc(wire)) {
    comparePage(app, wire);
    return;
  }
  const data = decodeResult(wire);
  const file = isSummaryResult(data) ? data.path : data.summary?.file;
  const jsonName = file ? baseName(file).replace(/\.[^.]*$/, "") + ".json" : "heterodyne-result.json";
  const downloads = h(
    "section",
    { class: "downloads" },
    h("h2", null, "Downloads"),
    h(
      "button",
      {
        type: "button",
        class: "download download-json",
        // The data is already in the page: saving it needs no server.
        onclick: () => downloadBlob(jsonName, new Blob([JSON.stringify(wire)], { type: "application/json" })),
      },
      "Download JSON",
    ),
  );
  const main = h("main", { class: "page" });
  app.append(h("header", { class: "top" }, h("span", { class: "brand" }, "heterodyne"), h("span", { class: "muted" }, "report")), main);
  if (isSummaryResult(data)) {
    renderSummaryResult(main, data, downloads);
    return;
  }
  if (!data.summary || !Array.isArray(data.chunks)) {
    main.append(errorBox("This report holds no result (no summary or chunks)."));
    return;
  }
  renderResult(main, data, downloads);
}

/** An inline icon, so the browser does not ask the server (or the disk) for /favicon.ico. */
function setIcon(): void {
  if (document.querySelector('link[rel="icon"]')) return;
  const svg = "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'><path d='M1 9c2-6 4-6 7 0s5 6 7 0' fill='none' stroke='%232563eb' stroke-width='2'/></svg>";
  document.head.append(h("link", { rel: "icon", href: `data:image/svg+xml,${svg}` }));
}

function boot(): void {
  const app = document.getElementById("app");
  if (!app) return;
  setIcon();
  try {
    if (window.HD_DATA) reportPage(app, window.HD_DATA);
    else if (window.HD_SERVE === true) startServeUI(app);
    else app.append(errorBox("No data: this page expects window.HD_DATA or window.HD_SERVE."));
  } catch (e) {
    app.append(errorBox(`Could not draw the page: ${errorMessage(e)}`));
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
