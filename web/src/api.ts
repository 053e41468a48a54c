// The serve API. Every failure (network, HTTP error with {"error": ...}, bad JSON) becomes an
// ApiError with one readable line, which callers show in an element with class "error".
import { decodeResult } from "./decode";
import type { ExperimentInfo, ModelInfo, ResultDoc, RunInfo, RunRequest, TextInfo } from "./types";

export class ApiError extends Error {}

async function request<T>(method: "GET" | "POST", url: string, body?: unknown): Promise<T> {
  // The server takes only JSON POSTs (a page of another origin cannot send those without a
  // CORS preflight), so even a POST with nothing to say sends an empty JSON object.
  const payload = method === "POST" ? JSON.stringify(body ?? {}) : undefined;
  let r: Response;
  try {
    r = await fetch(url, {
      method,
      headers: payload === undefined ? undefined : { "Content-Type": "application/json" },
      body: payload,
      cache: "no-store",
    });
  } catch {
    throw new ApiError(`${method} ${url}: no answer from the server (is heterodyne serve still running?)`);
  }
  const text = await r.text();
  let data: unknown = undefined;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON: reported below with the status.
  }
  if (!r.ok) {
    const err = data && typeof data === "object" && "error" in data ? String((data as { error: unknown }).error) : "";
    throw new ApiError(err || `${method} ${url}: HTTP ${r.status} ${r.statusText}`.trim());
  }
  if (data === undefined) throw new ApiError(`${method} ${url}: the server's answer is not JSON`);
  return data as T;
}

const enc = encodeURIComponent;

export const api = {
  models: () => request<ModelInfo[]>("GET", "/api/models"),
  texts: () => request<TextInfo[]>("GET", "/api/texts"),
  quantTypes: () => request<string[]>("GET", "/api/quant-types"),
  experiments: () => request<ExperimentInfo[]>("GET", "/api/experiments"),
  result: async (name: string) => decodeResult(await request<ResultDoc>("GET", `/api/experiments/${enc(name)}/result`)),
  startRun: (req: RunRequest) => request<{ id: string | number }>("POST", "/api/runs", req),
  runs: () => request<RunInfo[]>("GET", "/api/runs"),
  run: (id: string | number) => request<RunInfo>("GET", `/api/runs/${enc(String(id))}`),
  cancel: (id: string | number) => request<{ ok: boolean }>("POST", `/api/runs/${enc(String(id))}/cancel`),
};

export function downloadHref(name: string, format: "hdy" | "json" | "csv"): string {
  return `/api/experiments/${enc(name)}/download?format=${format}`;
}

export function experimentHash(name: string): string {
  return `#/experiment/${enc(name)}`;
}
