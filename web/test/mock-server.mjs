// A stand-in for `heterodyne serve`, for developing and testing the serve UI without the C++
// build. It answers the API the UI uses with canned data (test/sample-result.json) and
// simulates runs that finish after a few seconds. Not the contract itself; see the README
// notes in the front end's hand-off.
//   node web/test/mock-server.mjs BUILD_DIR [PORT]     (BUILD_DIR holds app.js and app.css)
// MOCK_NO_TEXTS=1 makes /api/texts empty, so the UI must take pasted text.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const [dir, portArg] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node mock-server.mjs BUILD_DIR [PORT]");
  process.exit(2);
}
const port = Number(portArg ?? 8765);
const here = dirname(fileURLToPath(import.meta.url));
const result = JSON.parse(readFileSync(join(here, "sample-result.json"), "utf8"));
const safe = (s) => s.replaceAll("</", "<\\/");
const page = () =>
  '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n<title>heterodyne</title>\n<style>' +
  readFileSync(join(dir, "app.css"), "utf8") +
  '</style></head>\n<body><div id="app"></div>\n<script>window.HD_SERVE = true;</script>\n<script>' +
  safe(readFileSync(join(dir, "app.js"), "utf8")) +
  "</script></body></html>\n";

const models = [
  { path: "demo/demo-f32.gguf", name: "demo-f32", architecture: "llama", params: 3672320, file_type: "F32", size: 14714560 },
  { path: "qwen/Qwen3-0.6B-F16.gguf", name: "Qwen3 0.6B", architecture: "qwen3", params: 596049920, file_type: "F16", size: 1198000000 },
];
const experiments = new Map([["demo-vs-Q4_K_M", { result, modified: "2026-11-29T18:16:24Z" }]]);
const runs = [];
let nextId = 1;

function expInfo(name, e) {
  const s = e.result.summary;
  return { name, kind: "diff", positions: true, status: s.status, kl_mean: s.kl_mean, kl_ci95: s.kl_ci95, top1_change_rate: s.top1_change_rate, ppl_a: s.ppl_a, ppl_b: s.ppl_b, floor_kl_mean: s.floor_kl_mean, n_chunks: s.n_chunks, a: s.config.a.model, b: s.config.b.model, modified: e.modified };
}

function tick() {
  // One queued/running run advances a chunk per tick, like a single worker.
  const r = runs.find((x) => x.state === "running") ?? runs.find((x) => x.state === "queued");
  if (!r) return;
  if (r.state === "queued") {
    r.state = "running";
    r.message = "loading models";
    return;
  }
  r.chunk++;
  r.message = `chunk ${r.chunk}/${r.chunks}`;
  if (r.chunk >= r.chunks) {
    if (r.fail) {
      r.state = "failed";
      r.message = "llama.cpp could not load the model";
      return;
    }
    r.state = "done";
    r.message = "finished";
    r.experiment = `run-${r.id}-${r.b_quant || "b"}`;
    experiments.set(r.experiment, { result, modified: new Date().toISOString() });
  }
}
setInterval(tick, 500);

function send(res, status, body, type = "application/json") {
  res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store" });
  res.end(typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body));
}

createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  const p = url.pathname;
  let m;
  if (req.method === "GET" && p === "/") return send(res, 200, page(), "text/html; charset=utf-8");
  if (req.method === "GET" && p === "/api/models") return send(res, 200, models);
  if (req.method === "GET" && p === "/api/texts") return send(res, 200, process.env.MOCK_NO_TEXTS ? [] : [{ path: "demo/held-out.txt", size: 232230 }]);
  if (req.method === "GET" && p === "/api/quant-types") return send(res, 200, ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K"]);
  if (req.method === "GET" && p === "/api/experiments") return send(res, 200, [...experiments].map(([n, e]) => expInfo(n, e)));
  if (req.method === "GET" && (m = /^\/api\/experiments\/([^/]+)\/result$/.exec(p))) {
    const e = experiments.get(decodeURIComponent(m[1]));
    return e ? send(res, 200, e.result) : send(res, 404, { error: `no experiment named ${decodeURIComponent(m[1])}` });
  }
  if (req.method === "GET" && (m = /^\/api\/experiments\/([^/]+)\/download$/.exec(p))) {
    const e = experiments.get(decodeURIComponent(m[1]));
    if (!e) return send(res, 404, { error: "no such experiment" });
    const f = url.searchParams.get("format");
    if (f === "json") return send(res, 200, e.result);
    if (f === "csv") return send(res, 200, "chunk,pos,kl\n0,1,0.0119\n", "text/csv");
    if (f === "hdy") return send(res, 200, Buffer.from("SQLite format 3\0 (mock)"), "application/octet-stream");
    return send(res, 400, { error: "format must be hdy, json or csv" });
  }
  if (req.method === "GET" && p === "/api/runs") return send(res, 200, runs.map(({ fail, b_quant, ...r }) => r));
  if (req.method === "POST" && (m = /^\/api\/runs\/([^/]+)\/cancel$/.exec(p))) {
    const r = runs.find((x) => String(x.id) === m[1]);
    if (!r) return send(res, 404, { error: "no such run" });
    if (r.state === "queued" || r.state === "running") (r.message = r.state === "running" ? `stopped after 0 of ${r.chunks ?? 0} chunks; to finish it: heterodyne diff --resume ${r.experiment}.hdy` : "cancelled before it started: nothing was written"), (r.state = "stopped");
    return send(res, 200, { ok: true });
  }
  if (req.method === "POST" && p === "/api/runs") {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      let b;
      try {
        b = JSON.parse(body);
      } catch {
        return send(res, 400, { error: "body is not JSON" });
      }
      if (!models.some((x) => x.path === b.a)) return send(res, 400, { error: `model not found: ${b.a}` });
      if (!b.b === !b.b_quant) return send(res, 400, { error: "give exactly one of b and b_quant" });
      if (!b.text === !b.text_file) return send(res, 400, { error: "give exactly one of text and text_file" });
      const r = { id: nextId++, state: "queued", chunk: 0, chunks: b.max_chunks, message: "queued", experiment: null, b_quant: b.b_quant, fail: b.b_quant === "Q2_K" };
      runs.push(r);
      send(res, 201, { id: r.id });
    });
    return;
  }
  send(res, 404, { error: `no route ${req.method} ${p}` });
}).listen(port, "127.0.0.1", () => console.log(`mock heterodyne serve on http://127.0.0.1:${port}/`));
