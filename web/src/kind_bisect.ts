// A bisect's page (src/kinds/bisect/): the line of candidates from the good build to the bad one,
// each probe's mean KL and top-1 flips against the good build next to the floor it is read
// against, the first that differs marked, and where its numbers part from the good build's (the
// first divergent tap and graph node, and whether single-token decode differs too).
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { fmt } from "./format";
import { sortableTable } from "./sortable_table";

interface Candidate { name: string; release?: string; commit?: string; subject?: string; index?: number }
interface Figures {
  kl_mean: number | null; kl_ci95: number | null; bitwise_identical: boolean; flips: number; n_scored: number;
  floor_kl_mean: number | null; floor_kl_ci95: number | null; floor_bitwise: boolean;
}
interface Probe { candidate: number; name: string; outcome: string; reason?: string; figures?: Figures; build_seconds?: number; diff_seconds?: number }
interface Unseen { name: string; op: string; why: string }
interface Diff { name: string; max_abs: number; rel_err: number | null; op?: string; uncompared_before?: Unseen[] }
interface Op {
  error?: string;
  tokens: number; decode_steps: number; first_tap: Diff | null; last_same_tap: string | null;
  first_node: Diff | null; decode: { differs: boolean; first_tap: Diff | null };
  nodes_compared?: number; uncompared?: Unseen[];
}
export interface BisectDoc {
  mode: string; good: string; bad: string; model: string; criterion: string; criterion_text: string;
  candidates: Candidate[]; probes: Probe[]; probes_needed: number; verdict: string;
  first_bad: Candidate | null; last_same: Candidate | null; suspects: number[]; op: Op | null;
  range?: Candidate[];
}

// A mean with its interval; alone where there is none (one chunk: stored null).
const withCi = (mean: number | null, ci: number | null) => (mean === null ? "not measured" : ci === null ? `${fmt(mean)} (one chunk)` : `${fmt(mean)} ± ${fmt(ci)}`);
const klText = (f: Figures) => (f.bitwise_identical ? "0 (exactly)" : withCi(f.kl_mean, f.kl_ci95));
const floorText = (f: Figures) => (f.floor_bitwise ? "0 (bitwise)" : withCi(f.floor_kl_mean, f.floor_kl_ci95));
const named = (c: Candidate | null) => (c ? c.name + (c.subject ? `  ${c.subject}` : "") : "none");

function verdictLine(doc: BisectDoc): string {
  if (doc.verdict === "no change") return `no change: ${doc.bad} does not differ from the good build (${doc.criterion_text})`;
  if (doc.verdict === "found") return `first that differs: ${named(doc.first_bad)}; last that is the same: ${named(doc.last_same)}`;
  return `the first that differs is one of: ${doc.suspects.map((i) => doc.candidates[i].name).join(", ")} (the others between do not build or run)`;
}

function opLines(op: Op): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (!op.first_tap) {
    out.push(h("p", {}, `taps on the first chunk (${op.tokens} tokens): all identical between the two builds`));
  } else {
    out.push(h("p", { class: "bisect-op" }, `first divergent tap: ${op.first_tap.name} (max |Δ| ${fmt(op.first_tap.max_abs)}); last identical: ${op.last_same_tap ?? "none"}`));
    const unseen = (list: Unseen[] | undefined) => (list ?? []).map((u) => h("li", {}, `${u.name} (ggml op ${u.op}): ${u.why}`));
    if (op.first_node) {
      out.push(h("p", { class: "bisect-op" }, `first divergent graph node: ${op.first_node.name} (ggml op ${op.first_node.op ?? "?"}), max |Δ| ${fmt(op.first_node.max_abs)}`));
      if (op.first_node.uncompared_before?.length) out.push(h("p", {}, "or before it, in a node that cannot be compared:"), h("ul", {}, ...unseen(op.first_node.uncompared_before)));
    } else {
      out.push(h("p", {}, `no graph node between them that could be compared differs (${op.nodes_compared ?? 0} compared): the tap's own op, or one of:`), h("ul", {}, ...unseen(op.uncompared)));
    }
  }
  out.push(h("p", {}, `single-token decode (${op.decode_steps} steps): ${op.decode.differs ? `differs too, first at ${op.decode.first_tap?.name ?? "?"}` : "identical"}`));
  return out;
}

export function renderBisect(root: HTMLElement, doc: BisectDoc): void {
  const first = doc.first_bad?.index ?? -1;
  const mark = doc.verdict === "ambiguous" ? "← the newest suspect" : "← first that differs";
  const cols = [
    { label: "candidate", numeric: true, key: (p: Probe) => p.candidate, cell: (p: Probe) => (p.candidate === first ? h("strong", {}, `${p.name} ${mark}`) : p.name) },
    { label: "outcome", key: (p: Probe) => p.outcome, cell: (p: Probe) => p.outcome },
    { label: "mean KL vs good", numeric: true, key: (p: Probe) => p.figures?.kl_mean ?? -1, cell: (p: Probe) => (p.figures ? klText(p.figures) : p.reason ?? "") },
    { label: "floor (larger)", numeric: true, key: (p: Probe) => p.figures?.floor_kl_mean ?? -1, cell: (p: Probe) => (p.figures ? floorText(p.figures) : ""), title: "each build against itself re-split; the larger" },
    { label: "top-1 flips", numeric: true, key: (p: Probe) => p.figures?.flips ?? -1, cell: (p: Probe) => (p.figures ? `${p.figures.flips} of ${p.figures.n_scored}` : "") },
    { label: "build s", numeric: true, key: (p: Probe) => p.build_seconds ?? 0, cell: (p: Probe) => (p.build_seconds === undefined ? "" : p.build_seconds.toFixed(0)) },
  ];
  const probes = [...doc.probes].sort((a, b) => a.candidate - b.candidate);
  root.append(h("p", { class: "bisect-headline" }, `${doc.mode} from ${doc.good} to ${doc.bad}: ${doc.candidates.length} candidates, ${doc.probes.length} probes (at most ${doc.probes_needed} when none is skipped); criterion ${doc.criterion}: ${doc.criterion_text}`));
  root.append(h("p", { class: "bisect-verdict" }, verdictLine(doc)));
  root.append(sortableTable(cols, probes, { class: "bisect" }).el);
  if (doc.range) root.append(h("p", {}, "commits from the last that is the same to the first that differs:"), h("ul", { class: "bisect-range" }, ...doc.range.map((c) => h("li", {}, named(c)))));
  if (doc.op?.error) root.append(h("p", {}, `where the numbers part: not found (${doc.op.error})`));
  else if (doc.op) root.append(...opLines(doc.op));
}

registerKindView("bisect", renderBisect);
