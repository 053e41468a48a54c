// The echo kind's page (src/kinds/echo/): arm A's mean NLL and perplexity over the positions it
// scored. The smallest kind page, the worked example of docs/extending.md.
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { fmt, isNum } from "./format";
import type { Num } from "./types";

export interface EchoDoc {
  model: string;
  n_chunks: number;
  n_positions: number;
  n_nll_infinite: number;
  nll_mean?: Num;
  ppl?: Num;
}

export function renderEcho(root: HTMLElement, doc: EchoDoc): void {
  const number = (v: Num) => (isNum(v) ? fmt(v) : "n/a (no finite NLL)");
  root.append(h("p", { class: "echo-headline" }, `mean NLL ${number(doc.nll_mean)} · PPL ${number(doc.ppl)} over ${doc.n_positions} positions in ${doc.n_chunks} chunks`));
  if (doc.n_nll_infinite > 0) root.append(h("p", { class: "muted" }, `NLL is +inf (the next token masked) at ${doc.n_nll_infinite} positions, left out of the mean`));
}

registerKindView("echo", renderEcho);
