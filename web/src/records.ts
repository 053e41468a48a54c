// Written by tools/records_ts.cpp from the C++ field tables (common/record.h): do not edit.
// `make records-ts` writes it again; make test checks it is current.
import type { Num } from "./types";

/** One experiment file in serve's list (GET /api/experiments): src/kinds/catalog_entry.h. */
export interface ExperimentInfo {
  /** the file's name without .hdy */
  name: string;
  /** the experiment kind (src/kinds/), its command's name */
  kind: string;
  /** running (a process writes it), stopped (none does: resumable), complete, or unknown */
  status: string;
  /** its file holds per-position rows (a diff): the numbers below are its, and it can be compared */
  positions: boolean;
  /** arm A's model, as serve shows paths */
  a: string;
  /** arm B's model, or the quantization type B was made with */
  b: string;
  /** mean KL(A || B) over the positions where it is finite */
  kl_mean?: Num;
  kl_ci95?: Num;
  /** positions where B masks a token A gives mass (KL +inf), left out of the mean */
  kl_infinite_positions?: number;
  top1_change_rate?: Num;
  ppl_a?: Num;
  ppl_b?: Num;
  /** the floor's mean KL, what kl_mean is read against */
  floor_kl_mean?: Num;
  n_chunks?: number;
  /** B's file size in bytes */
  b_size?: Num;
  /** B's file size in bits over its parameter count */
  b_bpw?: Num;
  /** a part of a sharded run: "K/N" */
  shard?: string;
  /** how many parts a merged file joined */
  merged_parts?: number;
  /** the file's last write, in seconds since the epoch */
  modified: number;
}

/** One run of serve's queue (GET /api/runs, /api/runs/ID): src/serve/runs.h. */
export interface RunInfo {
  id: number;
  /** queued | running | done | failed | stopped (resumable: message gives the command) */
  state: string;
  /** chunks stored so far */
  chunk: number;
  /** chunks in the run (0 until it says) */
  chunks: number;
  /** the last progress line, or the error */
  message: string;
  /** its file's name under the experiments folder */
  experiment: string;
  /** since the run started */
  seconds_elapsed?: Num;
  /** what is left, at the mean time of its last chunks */
  seconds_left?: Num;
}

/** One arm's settings as stored (config a and b, provenance arms): src/engine/arm_settings.h's kArmFields. */
export interface StoredArm {
  model: string;
  cache_type_k: string;
  cache_type_v: string;
  flash_attn: string;
  n_ubatch: number;
  n_threads: number;
  device: string;
  n_gpu_layers: number;
  rpc: string[];
  llama_build: string;
  slots: number;
  kv_unified: string;
  slot: number;
  neighbours: number;
  neighbour_seed: number;
  n_batch: number;
  prompt_cache: string;
  cache_reuse: number;
}
