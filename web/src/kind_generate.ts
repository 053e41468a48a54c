// A generate run's page (src/kinds/generate/): how many prompts part, where, how many distinct
// completions B's trials give, and what makes them part; then every prompt's completions side
// by side, the parting token highlighted, its panel: both arms' top-5 and margins there, and the
// transplant steps (which copy of A's state into B gives A's token back). Token texts are the
// model's and may be anything: every one is a text node (dom.ts h).
import { registerKindView } from "./kind_views";
import { h } from "./dom";
import { fmt } from "./format";

interface Rate {
  text: string;
}
type Top = [number, number, string][]; // [id, p, piece]
interface Step {
  point: string;
  layer: number;
  piece: string;
  kl: number | "inf" | null;
  restores: boolean;
}
interface Transplant {
  parts: boolean;
  a_token: number;
  a_top1: number;
  a_piece: string; // the token A generated at the parting
  a_top1_piece: string; // A's top-1 there, teacher-forced
  b_piece: string; // B's top-1 there, teacher-forced
  steps?: Step[];
  verdict?: { point: string; layer: number };
}
interface Trial {
  pieces: string[];
  ended: boolean;
  parted: number;
  common: number;
  top_a?: Top;
  top_b?: Top;
  margin_a?: number;
  margin_b?: number;
  transplant?: Transplant;
}
interface PromptDoc {
  prompt: number;
  text: string;
  n_tokens: number;
  a: { pieces: string[]; ended: boolean };
  b: Trial[];
}
export interface GenerateDoc {
  a?: { model?: string };
  b?: { model?: string };
  n_prompts: number;
  max_tokens: number;
  trials: number;
  temperature: number;
  seed?: number;
  parted?: Rate;
  parted_any?: Rate;
  median_parting: number | null;
  distinct?: { mean: number | null; max: number; a_among_them: number };
  transplants: { why_not?: string; run?: number; verdicts?: { point: string; layer: number; prompts: number }[]; not_parting_teacher_forced?: number };
  prompts?: PromptDoc[];
}

function verdictText(v: { point: string; layer: number }, nLayer: number | undefined): string {
  if (v.layer < 0) return "B's token embeddings";
  if (v.point === "head" || (nLayer !== undefined && v.layer >= nLayer)) return "B's output head";
  return `layer ${v.layer}`;
}

/** A completion as token spans, the token at `mark` highlighted. */
function completion(label: string, pieces: string[], mark: number): HTMLElement {
  const line = h("div", { class: "generate-completion" }, h("span", { class: "generate-arm" }, label));
  pieces.forEach((p, i) => line.append(h("span", { class: i === mark ? "generate-parting" : i > mark && mark >= 0 ? "generate-after" : "generate-token" }, p)));
  return line;
}

function topTable(top: Top | undefined, margin: number | undefined, arm: string): HTMLElement {
  const rows = (top ?? []).map(([id, p, piece]) => h("tr", {}, h("td", { class: "token" }, piece), h("td", { class: "num" }, String(id)), h("td", { class: "num" }, fmt(p))));
  return h("table", { class: "generate-top" }, h("caption", {}, `${arm}'s top-5 (margin ${margin === undefined ? "—" : fmt(margin)})`), ...rows);
}

function transplantPanel(t: Transplant, nLayer: number | undefined): HTMLElement {
  if (!t.parts) {
    return h("p", {}, t.a_top1 !== t.a_token
      ? `teacher-forced, A predicts “${t.a_top1_piece}” here, not its generated “${t.a_piece}”: the decode steps' kernels moved A's own token; no layer is named`
      : `teacher-forced, B predicts A's “${t.a_piece}” here too: the parting comes from the decode steps' kernels, not from a layer`);
  }
  const rows = (t.steps ?? []).map((s) => h("tr", {}, h("td", {}, s.point), h("td", { class: "token" }, s.piece), h("td", { class: "num" }, s.kl === null ? "—" : s.kl === "inf" ? "inf" : fmt(s.kl)), h("td", {}, s.restores ? "gives A's token" : "B's token")));
  return h("div", {},
    h("p", {}, `made to part by ${t.verdict ? verdictText(t.verdict, nLayer) : "—"}: A's state copied into B past it gives back “${t.a_piece}” (B alone: “${t.b_piece}”)`),
    h("table", { class: "generate-steps" }, h("tr", {}, h("th", {}, "A's state copied at"), h("th", {}, "B then predicts"), h("th", {}, "KL(A || B patched)"), h("th", {}, "")), ...rows));
}

function promptBlock(p: PromptDoc, nLayer: number | undefined): HTMLElement {
  const first = p.b[0];
  const block = h("section", { class: "generate-prompt" }, h("h3", {}, `prompt ${p.prompt} (${p.n_tokens} tokens)`), h("pre", { class: "generate-text" }, p.text));
  block.append(h("p", {}, first.parted < 0 ? `parted: never (${first.common} tokens in common)` : `parted at generated token ${first.parted} (common prefix ${first.common})`));
  block.append(completion("A", p.a.pieces, first.parted), completion("B", first.pieces, first.parted));
  if (first.parted >= 0) block.append(h("div", { class: "generate-panel" }, topTable(first.top_a, first.margin_a, "A"), topTable(first.top_b, first.margin_b, "B")));
  for (const t of p.b) if (t.transplant) block.append(transplantPanel(t.transplant, nLayer));
  if (p.b.length > 1) block.append(h("p", {}, `over ${p.b.length} trials: ${p.b.filter((t) => t.parted >= 0).length} part from A`));
  return block;
}

export function renderGenerate(root: HTMLElement, doc: GenerateDoc, nLayer?: number): void {
  const how = doc.temperature > 0 ? `sampled at temperature ${doc.temperature} with seed ${doc.seed ?? 0} on both arms (parting then also measures the sampler's sensitivity)` : "greedy";
  root.append(
    h("p", { class: "generate-headline" }, `parted (B's first trial against A): ${doc.parted?.text ?? "—"}; median parting token ${doc.median_parting === null ? "—" : fmt(doc.median_parting)}`),
    h("p", {}, `${doc.n_prompts} prompts, up to ${doc.max_tokens} generated tokens each, ${how}`),
  );
  if (doc.distinct) root.append(h("p", {}, `over ${doc.trials} trials of B: parted in any ${doc.parted_any?.text ?? "—"}; distinct completions per prompt: mean ${doc.distinct.mean === null ? "—" : fmt(doc.distinct.mean)}, most ${doc.distinct.max}`));
  const t = doc.transplants;
  root.append(h("p", {}, t.why_not ? `transplants: none (${t.why_not})` : `what makes it part: ${(t.verdicts ?? []).map((v) => `${verdictText(v, nLayer)}: ${v.prompts}`).join(", ") || "—"}`));
  for (const p of doc.prompts ?? []) root.append(promptBlock(p, nLayer));
}

registerKindView("generate", (root: HTMLElement, doc: GenerateDoc) => renderGenerate(root, doc));
