// The result document arrives in columns (format 2: src/report/result.h), which keeps a 20k
// token report small; the views read one Position per token, built here once.
import type { Chunk, Num, Position, Result, ResultDoc, TopEntry, WireChunk, WireResult } from "./types";

function isWire(doc: unknown): doc is WireResult {
  return !!doc && typeof doc === "object" && (doc as WireResult).format === 2 && Array.isArray((doc as WireResult).chunks);
}

function tops(flat: Num[] | null | undefined, piece: (id: Num) => string): TopEntry[] | undefined {
  if (!Array.isArray(flat)) return undefined;
  const out: TopEntry[] = [];
  for (let k = 0; k + 1 < flat.length; k += 2) out.push([piece(flat[k]), flat[k + 1]]);
  return out;
}

function decodeChunk(c: WireChunk, pieces: Record<string, string>): Chunk {
  const piece = (id: Num) => (id === null || id === undefined ? "" : (pieces[String(id)] ?? `<${id}>`));
  const layers = c.layers ?? [];
  const points = c.points;
  // Each plug-in's rows, grouped by the token they are shown on.
  const rowsAt = new Map<number, NonNullable<Position["analyses"]>>();
  for (const [name, t] of Object.entries(c.analyses ?? {})) {
    for (const row of t.rows) {
      const i = Number(row[0]);
      const at = rowsAt.get(i) ?? {};
      (at[name] ??= { columns: t.columns, token_columns: t.token_columns, rows: [] }).rows.push(row.slice(1));
      rowsAt.set(i, at);
    }
  }
  const positions: Position[] = (c.tokens ?? []).map((id, i) => {
    const p: Position = { pos: i, text: piece(id), scored: c.scored?.[i] === 1 };
    if (i === 0) return p;
    p.kl = c.kl?.[i];
    p.nll_a = c.nll_a?.[i];
    p.nll_b = c.nll_b?.[i];
    p.top_a = tops(c.top_a?.[i], piece);
    p.top_b = tops(c.top_b?.[i], piece);
    if (layers.length) p.rel_err = layers.map((l) => l.rel_err?.[i]);
    if (points && c.denoise) p.denoise = c.denoise.map((s) => s?.[i]);
    if (points && c.noise) p.noise = c.noise.map((s) => s?.[i]);
    const own = rowsAt.get(i);
    if (own) p.analyses = pieceColumns(own, piece);
    return p;
  });
  return { chunk: c.chunk, positions, layers: layers.map((l) => l.layer), points };
}

/** The columns the document names as token ids (the lens's top-1): shown as their text. */
function pieceColumns(at: NonNullable<Position["analyses"]>, piece: (id: Num) => string): NonNullable<Position["analyses"]> {
  for (const t of Object.values(at)) {
    const tokens = new Set(t.token_columns ?? []);
    const ids = t.columns.map((c, k) => (tokens.has(c) ? k : -1)).filter((k) => k >= 0);
    if (ids.length) t.rows = t.rows.map((r) => r.map((v, k) => (ids.includes(k) && typeof v === "number" ? piece(v) : v)));
  }
  return at;
}

/** A format-2 document becomes a Result; anything else (a sweep's summary, an older page's
 *  positions) is returned as it is. */
export function decodeResult(doc: ResultDoc | WireResult): ResultDoc {
  if (!isWire(doc)) return doc as ResultDoc;
  const pieces = doc.pieces ?? {};
  return { summary: doc.summary, chunks: doc.chunks.map((c) => decodeChunk(c, pieces)) } satisfies Result;
}
