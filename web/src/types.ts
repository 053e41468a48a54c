// Shapes of the result JSON (summary + chunks) and of the serve API.
// NaN is written as null by the C++ side, so every number may be null.

export type Num = number | null | undefined;
/** A 95 % interval given as [lo, hi] (transplants, components). */
export type Interval = [Num, Num];

export interface LayerStat {
  layer: number;
  rel_err_mean: Num;
  rel_err_ci95: Num;
  cosine_mean?: Num;
  max_abs?: Num;
  /** The larger of the two below. */
  floor_rel_err_mean?: Num;
  floor_a_rel_err_mean?: Num;
  floor_b_rel_err_mean?: Num;
  /** "interval includes 0", "within the floor", "above a zero floor", "31× floor" (src/analysis/against_floor.h). */
  standing?: string[];
}

export interface CurvePoint {
  point: string;
  kl_mean: Num;
  kl_ci95: Interval | Num;
  standing?: string[];
}

export interface Transplants {
  denoise?: CurvePoint[];
  noise?: CurvePoint[];
}

export interface ComponentLayer {
  layer: number;
  attention: Num;
  attention_ci95: Interval;
  mlp: Num;
  mlp_ci95: Interval;
  attention_standing?: string[];
  mlp_standing?: string[];
}

export interface ComponentDirection {
  layers: ComponentLayer[];
  embedding?: Num;
  embedding_ci95?: Interval;
  final?: Num;
  untouched?: Num;
  attention_total?: Num;
  attention_total_ci95?: Interval;
  mlp_total?: Num;
  mlp_total_ci95?: Interval;
  embedding_standing?: string[];
  attention_total_standing?: string[];
  mlp_total_standing?: string[];
  paired_diff?: Num;
  paired_diff_ci95?: Interval;
  attention_share_min?: Num;
  attention_share_max?: Num;
}

export interface Components {
  denoise?: ComponentDirection;
  noise?: ComponentDirection;
}

/** summary.floor: per figure the larger of A vs A′ and B vs B′. */
export interface FloorSummary {
  kl_mean?: Num;
  kl_ci95?: Num;
  top1_change_rate?: Num;
  top1_change?: RateCell;
  bitwise_identical?: boolean;
  ppl_a_resplit?: Num;
  ppl_b_resplit?: Num;
  /** A's and B's own PPL on the floor's chunks; sent only where they are a sample. */
  ppl_a_on_floor_chunks?: Num;
  ppl_b_on_floor_chunks?: Num;
  chunks_measured?: Num;
  chunks_rule?: string;
  ubatch_a?: Num;
  ubatch_b?: Num;
}

/** summary.floor_a / floor_b: one arm against itself re-split. */
export interface ArmFloor {
  kl_mean?: Num;
  kl_ci95?: Num;
  top1_change_rate?: Num;
  top1_change?: RateCell;
  bitwise_identical?: boolean;
  ppl_a?: Num;
  ppl_b?: Num;
  n_scored?: Num;
}

/** Arm settings as found in config.a/b and provenance.arms.a/b (the latter has more). */
/** An arm as provenance records it: its stored settings, then the facts of its run. */
export interface ArmInfo extends Partial<StoredArm> {
  n_threads_used?: number;
  architecture?: string;
  model_description?: string;
  model_sha256?: string;
  model_size?: number;
  n_params?: number;
  n_layer?: number;
  /** Where and how it ran; flash_attn: what llama.cpp resolved -fa to, where its log said. */
  runs_on?: { process?: string; flash_attn?: string; [k: string]: unknown };
}

/** A rate with its interval inside [0, 1] (src/report/rates.h); lo and hi null, and why,
 * where there is none. */
export interface RateCell {
  rate: number | null;
  lo: number | null;
  hi: number | null;
  n: number;
  chunks: number;
  why: string | null;
  text: string;
}

export type AnalysisCell = string | number | null | RateCell;

/** A plug-in analysis' summary (src/report/analyses.h): a titled table and notes. */
export interface AnalysisTable {
  title: string;
  columns: string[];
  rows: AnalysisCell[][];
  notes: string[];
}

export interface Summary {
  kl_mean: Num;
  kl_ci95: Num;
  top1_change_rate: Num;
  /** The rate with its interval inside [0, 1] and the words show prints for it. */
  top1_change?: RateCell;
  floor_top1_change?: RateCell | null;
  ppl_a: Num;
  ppl_b: Num;
  n_scored?: Num;
  n_chunks?: Num;
  status?: string;
  integrity?: string;
  file?: string;
  floor_kl_mean?: Num;
  floor_kl_ci95?: Num;
  floor_top1_change_rate?: Num;
  floor?: FloorSummary | null;
  floor_a?: ArmFloor | null;
  floor_b?: ArmFloor | null;
  standing?: { kl?: string[]; top1_change?: string[] };
  /** "3 chunks: intervals are wide" below 5 chunks, else null. */
  intervals_note?: string | null;
  /** Where KL is +inf at some positions (B masks a token A gives mass): how many, the first, and that the means leave them out; else null. */
  infinite_note?: string | null;
  /** Which splits the floor was measured on (two, chunks alternating, or one and why), and whether they disagree by more than 10×. */
  floor_splits_note?: string | null;
  floor_coverage_note?: string | null;
  kl_percentiles?: Record<string, Num>;
  layers?: LayerStat[];
  transplants?: Transplants | null;
  components?: Components | null;
  analyses?: Record<string, AnalysisTable>;
  /** MoE runs with --routing: where B chose other experts, as lines (src/analysis/routing_map.cpp). */
  routing_map?: string[];
  config?: {
    a?: ArmInfo;
    b?: ArmInfo;
    b_quant?: string;
    chunk?: number;
    max_chunks?: number;
    text_file?: string;
    score_from?: string;
    [k: string]: unknown;
  };
  provenance?: {
    arms?: { a?: ArmInfo; b?: ArmInfo; floor?: ArmInfo };
    command_line?: string;
    started_at?: string;
    finished_at?: string;
    heterodyne?: { version?: string; commit?: string };
    llama_cpp?: { commit?: string };
    text?: { path?: string; bytes?: number };
    tokens?: { count?: number };
    [k: string]: unknown;
  };
}

/** [token text, probability] */
export type TopEntry = [string, Num];

export interface Position {
  pos: number;
  text: string;
  scored: boolean;
  kl?: Num;
  nll_a?: Num;
  nll_b?: Num;
  top_a?: TopEntry[];
  top_b?: TopEntry[];
  /** This position's residual relative error after each layer (Chunk.layers order). */
  rel_err?: Num[];
  /** KL left after each restore point (Chunk.points order), both directions. */
  denoise?: Num[];
  noise?: Num[];
  /** This position's rows of each per-position plug-in (lens: one per layer); token columns'
   *  ids already turned into their text. */
  analyses?: Record<string, { columns: string[]; token_columns?: string[]; rows: (number | string | null)[][] }>;
}

export interface Chunk {
  chunk: number;
  positions: Position[];
  layers?: number[];
  points?: string[];
}

/** The wire form of a result (format 2, src/report/result.h): columns per chunk, token ids
 *  with one piece table. decode.ts turns it into Result. */
export interface WireChunk {
  chunk: number;
  tokens: number[];
  scored: number[];
  kl: Num[];
  nll_a: Num[];
  nll_b: Num[];
  top_a: (Num[] | null)[];
  top_b: (Num[] | null)[];
  layers?: { layer: number; rel_err: Num[] }[];
  points?: string[];
  denoise?: Num[][];
  noise?: Num[][];
  /** Plug-ins with rows per position (lens, routing): each row's first cell is the token
   *  index i, then the columns (pos left out). */
  analyses?: Record<string, { columns: string[]; token_columns?: string[]; rows: (number | string | null)[][] }>;
}

export interface WireResult {
  format: 2;
  summary: Summary;
  pieces: Record<string, string>;
  chunks: WireChunk[];
}

export interface Result {
  summary: Summary;
  chunks: Chunk[];
}

/** A sweep's or floor's document: its stored summary and the text show prints for it. */
export interface SummaryResult {
  kind: string;
  text: string;
  /** The heading over text (a reference's is check's output, not show's). */
  text_title?: string;
  path?: string;
  status?: string;
  integrity?: string;
}

export type ResultDoc = Result | SummaryResult;

/** What `heterodyne report a.hdy b.hdy …` embeds: each diff's document under its file name. */
export interface CompareDoc {
  kind: "compare";
  runs: { name: string; result: ResultDoc }[];
}

export function isCompareDoc(d: unknown): d is CompareDoc {
  return typeof d === "object" && d !== null && (d as CompareDoc).kind === "compare" && Array.isArray((d as CompareDoc).runs);
}

// ---- serve API ----

export interface ModelInfo {
  path: string;
  name?: string;
  architecture?: string;
  params?: Num;
  file_type?: string;
  size?: Num;
}

export interface TextInfo {
  path: string;
  size?: Num;
}

// The records the server sends, generated from their C++ field tables (web/src/records.ts).
export type { ExperimentInfo, RunInfo, StoredArm } from "./records";
import type { StoredArm } from "./records";

export interface ArmSettings {
  ctk: string;
  ctv: string;
  fa: string;
  ub: number;
  t: number;
}

export interface RunRequest {
  a: string;
  b: string;
  b_quant: string;
  a_settings: ArmSettings;
  b_settings: ArmSettings;
  text: string;
  text_file: string;
  chunk: number;
  max_chunks: number;
  transplants: boolean;
  components: boolean;
}

declare global {
  interface Window {
    HD_DATA?: ResultDoc | CompareDoc;
    HD_SERVE?: boolean;
  }
}
