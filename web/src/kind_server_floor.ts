// The deployment floor's page (src/kinds/server_floor/): how much what else llama-server is
// doing moves a model's greedy tokens and logits, against -np 1 without the prompt cache.
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { fmt, isNum } from "./format";
import type { Num } from "./types";

/** A rate as report/rates.h writes it: its text is what every view prints. */
interface Rate {
  text: string;
}

export interface ServerFloorDoc {
  model: string;
  server: string;
  trials: number;
  n_chunks: number;
  n_positions: number;
  dependent?: Rate;
  varying?: Rate;
  kl_mean: Num | "inf";
  kl_max: Num | "inf";
}

export function renderServerFloor(root: HTMLElement, doc: ServerFloorDoc): void {
  const kl = (v: Num | "inf") => (v === "inf" ? "inf" : isNum(v) ? fmt(v) : "n/a");
  const against = doc.server === "" ? "the plain arm itself" : doc.server;
  root.append(
    h("p", { class: "server-floor-headline" }, `greedy token depends on what else the server is doing (the compositions' top-1 disagree): ${doc.varying?.text ?? "—"}`),
    h("p", {}, `${against} against -np 1 without the prompt cache, ${doc.trials} compositions, ${doc.n_positions} positions in ${doc.n_chunks} chunks`),
    h("p", {}, `greedy token differs from -np 1 alone in at least one composition: ${doc.dependent?.text ?? "—"}`),
    h("p", {}, `KL(-np 1 || server) per position: mean over compositions ${kl(doc.kl_mean)}, largest ${kl(doc.kl_max)}`),
  );
}

registerKindView("server-floor", renderServerFloor);
