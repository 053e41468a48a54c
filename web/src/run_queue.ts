// The run queue (#runs): polls /api/runs every second while a run is queued or running and
// stops when none is, so an idle page sends no requests.
import { api } from "./api";
import { experimentHash } from "./api";
import { clear, errorBox, errorMessage, h } from "./dom";
import { fmtDuration, isNum } from "./format";
import type { RunInfo } from "./types";

const POLL_MS = 1000;
const active = (r: RunInfo) => r.state === "queued" || r.state === "running";

export class RunQueue {
  readonly el: HTMLElement;
  private list: HTMLElement;
  private status: HTMLElement;
  private timer = 0;
  private stopped = false;
  private inFlight = false;
  private pending = false;
  /** Last rendered JSON per run: rows are rebuilt only when a run changed, so a click on
   *  "cancel" is not lost to a repaint. */
  private seen = new Map<string, string>();
  private rows = new Map<string, HTMLElement>();

  constructor(private onFinished: () => void) {
    // Announced politely to screen readers: a run starting, advancing, finishing or failing.
    this.list = h("ul", { class: "run-list", "aria-live": "polite", "aria-relevant": "additions text" });
    this.status = h("div", { class: "runs-status" });
    this.el = h("div", { id: "runs" }, this.status, this.list);
  }

  /** Fetches now; keeps polling while anything is active. */
  async refresh(): Promise<void> {
    if (this.stopped) return;
    // A refresh asked for mid-request (say, right after a submit) runs once that one ends,
    // so a new run is never missed by an answer that predates it.
    if (this.inFlight) {
      this.pending = true;
      return;
    }
    clearTimeout(this.timer);
    this.inFlight = true;
    let again = false;
    try {
      const runs = await api.runs();
      if (this.stopped) return;
      clear(this.status);
      this.render(runs);
      again = runs.some(active);
    } catch (e) {
      if (this.stopped) return;
      clear(this.status);
      this.status.append(errorBox(errorMessage(e)));
      // Keep trying while runs were known to be active: the server may be busy.
      again = [...this.seen.values()].some((j) => /"state":"(queued|running)"/.test(j));
    } finally {
      this.inFlight = false;
    }
    if (this.pending && !this.stopped) {
      this.pending = false;
      return this.refresh();
    }
    if (again && !this.stopped) this.timer = window.setTimeout(() => void this.refresh(), POLL_MS);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private render(runs: RunInfo[]): void {
    if (runs.length === 0) {
      clear(this.list);
      this.rows.clear();
      this.seen.clear();
      this.list.append(h("li", { class: "muted empty-runs" }, "No runs yet."));
      return;
    }
    this.list.querySelector(".empty-runs")?.remove();
    let finished = false;
    const keep = new Set<string>();
    let prev: HTMLElement | null = null;
    // Newest first, as the experiments are: the run just started is the one watched.
    const newestFirst = [...runs].sort((x, y) => Number(y.id) - Number(x.id));
    for (const r of newestFirst) {
      const id = String(r.id);
      keep.add(id);
      const json = JSON.stringify(r);
      const old = this.seen.get(id);
      let row = this.rows.get(id);
      if (old !== json || !row) {
        if (old && /"state":"(queued|running)"/.test(old) && !active(r)) finished = true;
        const fresh = this.row(r);
        if (row) row.replaceWith(fresh);
        row = fresh;
        this.rows.set(id, row);
        this.seen.set(id, json);
      }
      if (prev) {
        if (prev.nextSibling !== row) prev.after(row);
      } else if (this.list.firstChild !== row) this.list.prepend(row);
      prev = row;
    }
    for (const id of [...this.rows.keys()]) {
      if (keep.has(id)) continue;
      this.rows.get(id)?.remove();
      this.rows.delete(id);
      this.seen.delete(id);
    }
    if (finished) this.onFinished();
  }

  private row(r: RunInfo): HTMLElement {
    const chunks = typeof r.chunks === "number" && r.chunks > 0 ? r.chunks : 0;
    const chunk = typeof r.chunk === "number" ? r.chunk : 0;
    const progress = h("progress", { max: chunks || 1, "aria-label": `run ${r.id} progress` });
    // Indeterminate (animated) only while an active run does not know its chunk count yet: a
    // run that failed or was stopped stops where it got to, a finished one is full.
    if (r.state === "done") progress.value = chunks || 1;
    else if (!active(r)) progress.value = chunks > 0 ? Math.min(chunk, chunks) : 0;
    else if (chunks > 0) progress.value = Math.min(chunk, chunks);
    const cancel = h("button", { type: "button", class: "cancel" }, "Cancel");
    cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      try {
        await api.cancel(r.id);
      } catch (e) {
        cancel.after(errorBox(errorMessage(e)));
      }
      void this.refresh();
    });
    return h(
      "li",
      { class: `run run-${r.state}`, "data-run-id": String(r.id), "data-state": r.state },
      h("span", { class: "run-id" }, `#${r.id}`),
      h("span", { class: `badge state state-${r.state}` }, r.state),
      progress,
      h("span", { class: "run-progress" }, chunks > 0 ? `${chunk}/${chunks} chunks` : ""),
      // Elapsed, and (while it runs) what is left at the mean of its last chunks: the child's
      // estimate, which does not jump with one slow chunk.
      h(
        "span",
        { class: "run-time" },
        isNum(r.seconds_elapsed) ? `${fmtDuration(r.seconds_elapsed)} elapsed${active(r) && isNum(r.seconds_left) ? ` · about ${fmtDuration(r.seconds_left)} left` : ""}` : "",
      ),
      h("span", { class: r.state === "failed" ? "run-message error" : "run-message" }, r.message ?? ""),
      active(r) ? cancel : null,
      // A stopped run's file holds its finished chunks (the message says how to resume it).
      (r.state === "done" || (r.state === "stopped" && /--resume/.test(r.message ?? ""))) && r.experiment
        ? h("a", { class: "result-link", href: experimentHash(r.experiment) }, `result: ${r.experiment}`)
        : null,
    );
  }
}
