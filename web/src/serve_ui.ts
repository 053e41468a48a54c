// The local server UI: a hash-routed single page. "#/" is home (models, new run, run queue,
// experiments); "#/experiment/NAME" shows one result with its downloads.
import { api, downloadHref } from "./api";
import { clear, errorBox, errorMessage, h } from "./dom";
import { baseName, fmtBytes, fmtParams, DASH } from "./format";
import { renderCompare } from "./compare_view";
import { experimentsTable } from "./experiments_table";
import { renderResult } from "./result_view";
import { isSummaryResult, renderSummaryResult } from "./summary_view";
import { runForm } from "./run_form";
import { RunQueue } from "./run_queue";
import type { ModelInfo, Result } from "./types";

/** Cleanup for the page on screen; called before the next route renders. */
let disposeCurrent: () => void = () => {};
/** Bumped on every navigation so a late answer for an old page is dropped. */
let generation = 0;

/** The server printed its address with ?token=; the first answer set a cookie that carries it
 *  from then on. The token leaves the address bar so it is not bookmarked, copied or shared. */
function hideToken(): void {
  const url = new URL(location.href);
  if (!url.searchParams.has("token")) return;
  url.searchParams.delete("token");
  history.replaceState(history.state, "", url.pathname + url.search + url.hash);
}

export function startServeUI(app: HTMLElement): void {
  hideToken();
  const main = h("main", { class: "page" });
  app.append(h("header", { class: "top" }, h("a", { href: "#/", class: "brand" }, "heterodyne"), h("span", { class: "muted" }, "compare two llama.cpp configurations")), main);
  const route = () => {
    disposeCurrent();
    disposeCurrent = () => {};
    clear(main);
    const gen = ++generation;
    const hash = location.hash.replace(/^#/, "");
    const m = /^\/experiment\/(.+)$/.exec(hash);
    const cmp = /^\/compare\/(.+)$/.exec(hash);
    if (cmp) void comparePage(main, cmp[1].split(",").map(decodeName), gen);
    else if (m) {
      void experimentPage(main, decodeName(m[1]), gen);
    } else homePage(main, gen);
    window.scrollTo(0, 0);
  };
  window.addEventListener("hashchange", route);
  route();
}

function decodeName(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function section(id: string | null, title: string, ...body: HTMLElement[]): HTMLElement {
  return h("section", { id: id ?? undefined, class: "panel" }, h("h2", null, title), ...body);
}

function homePage(main: HTMLElement, gen: number): void {
  const modelsBox = h("div", { id: "models" }, h("p", { class: "muted" }, "Loading models…"));
  const formBox = h("div", { class: "form-box" }, h("p", { class: "muted" }, "Loading…"));
  const experimentsBox = h("div", { id: "experiments" }, h("p", { class: "muted" }, "Loading…"));
  const refreshExperiments = () => void loadExperiments(experimentsBox, gen);
  const queue = new RunQueue(refreshExperiments);
  main.append(
    section(null, "Models", modelsBox),
    section(null, "New run", formBox),
    section(null, "Runs", queue.el),
    section(null, "Experiments", experimentsBox),
  );
  disposeCurrent = () => queue.stop();

  void (async () => {
    // Three independent lists: one failing must not hide the others' error or data.
    const [models, texts, quants] = await Promise.allSettled([api.models(), api.texts(), api.quantTypes()]);
    if (gen !== generation) return;
    clear(modelsBox);
    if (models.status === "fulfilled") modelsBox.append(modelsTable(models.value));
    else modelsBox.append(errorBox(errorMessage(models.reason)));
    clear(formBox);
    for (const r of [texts, quants]) if (r.status === "rejected") formBox.append(errorBox(errorMessage(r.reason)));
    formBox.append(
      runForm(
        models.status === "fulfilled" ? models.value : [],
        texts.status === "fulfilled" ? texts.value : [],
        quants.status === "fulfilled" ? quants.value : [],
        () => void queue.refresh(),
      ),
    );
  })();
  void queue.refresh();
  refreshExperiments();
}

function table(head: string[], rows: HTMLElement[]): HTMLElement {
  return h("table", { class: "data" }, h("thead", null, h("tr", null, ...head.map((t) => h("th", null, t)))), h("tbody", null, ...rows));
}

function modelsTable(models: ModelInfo[]): HTMLElement {
  if (models.length === 0) return h("p", { class: "muted empty" }, "No .gguf models in the models folder.");
  return table(
    ["name", "path", "architecture", "parameters", "type", "size"],
    models.map((m) =>
      h(
        "tr",
        { "data-path": m.path },
        h("td", null, m.name || baseName(m.path)),
        h("td", { class: "mono" }, m.path),
        h("td", null, m.architecture ?? DASH),
        h("td", null, fmtParams(m.params)),
        h("td", null, m.file_type ?? DASH),
        h("td", null, fmtBytes(m.size)),
      ),
    ),
  );
}

async function loadExperiments(box: HTMLElement, gen: number): Promise<void> {
  try {
    const list = await api.experiments();
    if (gen !== generation) return;
    clear(box);
    box.append(experimentsTable(list));
  } catch (e) {
    if (gen !== generation) return;
    clear(box);
    box.append(errorBox(errorMessage(e)));
  }
}

async function experimentPage(main: HTMLElement, name: string, gen: number): Promise<void> {
  const body = h("div", { class: "experiment-body" }, h("p", { class: "muted" }, "Loading result…"));
  main.append(h("nav", { class: "crumbs" }, h("a", { href: "#/" }, "← runs and experiments")), h("h1", null, name), body);
  try {
    const result = await api.result(name);
    if (gen !== generation) return;
    if (!result || typeof result !== "object") throw new Error("the result is not a document");
    const summary = isSummaryResult(result);
    if (!summary && (!result.summary || !Array.isArray(result.chunks))) throw new Error("the result has no summary or chunks");
    clear(body);
    // CSV is a diff's positions table.
    const formats = summary ? (["hdy", "json"] as const) : (["hdy", "json", "csv"] as const);
    const downloads = h(
      "section",
      { class: "downloads" },
      h("h2", null, "Downloads"),
      ...formats.map((f) => h("a", { href: downloadHref(name, f), download: "", class: `download download-${f}` }, `Download ${f.toUpperCase()}`)),
    );
    if (isSummaryResult(result)) disposeCurrent = renderSummaryResult(body, result, downloads);
    else disposeCurrent = renderResult(body, result, downloads);
  } catch (e) {
    if (gen !== generation) return;
    clear(body);
    body.append(errorBox(errorMessage(e)));
  }
}

async function comparePage(main: HTMLElement, names: string[], gen: number): Promise<void> {
  const body = h("div", { class: "experiment-body" }, h("p", { class: "muted", "aria-live": "polite" }, `Loading ${names.length} results…`));
  main.append(h("nav", { class: "crumbs" }, h("a", { href: "#/" }, "← runs and experiments")), h("h1", null, "Compare"), body);
  try {
    const results = await Promise.all(names.map(async (name) => ({ name, result: await api.result(name) })));
    if (gen !== generation) return;
    const notDiff = results.find((r) => isSummaryResult(r.result) || !r.result.summary || !Array.isArray(r.result.chunks));
    if (notDiff) throw new Error(`'${notDiff.name}' is not a diff: only diffs are compared`);
    clear(body);
    disposeCurrent = renderCompare(body, results as { name: string; result: Result }[]);
  } catch (e) {
    if (gen !== generation) return;
    clear(body);
    body.append(errorBox(errorMessage(e)));
  }
}
