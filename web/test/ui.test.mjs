// Browser tests of the web UI (headless Debian chromium via playwright-core). No framework:
// one line per check, exit 0 when all pass, 1 when any fails, 2 on bad usage.
//
//   node web/test/ui.test.mjs report FILE.html SCREENSHOT_DIR
//   node web/test/ui.test.mjs summary FILE.html SCREENSHOT_DIR   (a sweep's, floor's or recipe's report)
//   node web/test/ui.test.mjs compare FILE.html SCREENSHOT_DIR   (`report a.hdy b.hdy …`)
//   node web/test/ui.test.mjs hostile FILE.html SCREENSHOT_DIR   (a diff's report whose strings hold markup)
//   node web/test/ui.test.mjs serve URL SCREENSHOT_DIR MODEL_A_PATH QUANT_TYPE
//   node web/test/ui.test.mjs timing URL SCREENSHOT_DIR NAME,NAME…   (page_timing.mjs)
// (URL as heterodyne serve prints it, with its ?token=)
import { chromium } from "playwright-core";
import { mkdirSync, readFileSync } from "node:fs";
import { resolve, join } from "node:path";
import { pathToFileURL } from "node:url";
import { checkCompare, checkFloor, checkGenerate, checkRecommend, checkReference, checkSweep } from "./kind_checks.mjs";
import { pageTimingMode } from "./page_timing.mjs";
import { checkContrast, checkFixedColours, checkKeyboard, checkLogAxes, checkLogToggle, checkTickLabels, checkWaterfall, checkWorstTokens } from "./report_checks.mjs";

const [mode, target, shotDir, modelA, quantType] = process.argv.slice(2);
if (!(((mode === "report" || mode === "summary" || mode === "compare" || mode === "hostile") && target && shotDir) || (mode === "serve" && target && shotDir && modelA && quantType) || (mode === "timing" && target && shotDir && modelA))) {
  console.error("usage:\n  node ui.test.mjs report FILE.html SCREENSHOT_DIR\n  node ui.test.mjs serve URL SCREENSHOT_DIR MODEL_A_PATH QUANT_TYPE");
  process.exit(2);
}
mkdirSync(shotDir, { recursive: true });

let failures = 0;
function check(ok, what, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail ? ` — ${detail}` : ""}`);
  if (!ok) failures++;
  return ok;
}

// Plain English prose for serve mode when the server offers no text file (~3000 characters).
const PROSE = `The lighthouse stood at the end of a narrow spit of rock, and for most of the year the only
people who saw it up close were the keeper and the man who brought the supplies every second
Tuesday. The keeper had come to the island in the spring, expecting to stay a single season,
and had stayed eleven years. He kept a logbook in which he wrote the weather at dawn and at
dusk, the ships that passed, and anything else that seemed worth remembering: a seal asleep on
the landing stage, a storm that broke two windows in the lantern room, the morning the fog was
so thick that he could not see his own hand held out in front of him.
In the evenings he read. The supply boat brought him books from the library in the town, chosen
by a librarian he had never met, and over the years he came to know her through what she sent.
She liked long novels with many characters, histories of places he had never heard of, and
books about the sea written by people who had clearly never been on it. Sometimes she slipped a
note between the pages, a line or two about why she had picked a book, and he would write back
on the inside of the return slip, telling her what he had thought of it.
The work itself was simple but it could not be skipped. The lamp had to be lit before sunset and
put out after sunrise, the lens had to be cleaned of salt and soot, the clockwork that turned
it had to be wound every few hours through the night. In winter the wind came straight off the
water and found every gap in the walls, and he learned to sleep in short pieces, waking by habit
when the weights were close to the floor. He did not mind. There was a kind of quiet in the
routine that he had never found anywhere else, and he came to think of the light as something
alive that depended on him, the way a garden depends on the person who waters it.
When the letter came saying that the light would be automated, he read it twice and then put it
in the drawer with the logbooks. The engineers arrived in the autumn with crates of equipment
and a small diesel generator, and within a month the lamp turned itself on at dusk and off at
dawn without anyone touching it. They offered him a job on the mainland, in an office that
managed a dozen lights along the coast, and after some thought he accepted.
On his last morning he wrote the weather in the logbook as he always had, closed it, and left
it on the table for whoever might come after. The supply boat was waiting at the landing stage.
As it pulled away he watched the tower grow smaller against the grey sky, its light still
turning, steady and indifferent, exactly as it had every night for a hundred years. In the town
he went first to the library, to meet the woman who had chosen his books, and found that she had
been waiting to meet him too.
`;

async function pageFacts(page, resultUrl) {
  // Counted inside the page so the large result never crosses the wire twice. The document
  // is in columns (format 2, src/report/result.h): token i of a chunk is every array's i.
  return page.evaluate(async (url) => {
    const d = url ? await (await fetch(url)).json() : window.HD_DATA;
    let positions = 0, unscored = 0, text = "", maxKl = -1, worst = null;
    let last = null;
    for (const c of d.chunks)
      for (let i = 0; i < c.tokens.length; i++) {
        positions++;
        if (c.scored[i] !== 1) unscored++;
        else if (c.kl[i] > maxKl) {
          maxKl = c.kl[i];
          worst = { chunk: c.chunk, pos: i };
        }
        text += d.pieces[String(c.tokens[i])];
        last = { chunk: c.chunk, pos: i };
      }
    const first = d.chunks[0] ? { chunk: d.chunks[0].chunk, pos: 0 } : null;
    return {
      positions, unscored, textLength: text.length, text, first, last, maxKl, worst,
      floorKl: d.summary.floor_kl_mean ?? 0,
      hasTransplants: !!d.summary.transplants, hasComponents: !!d.summary.components,
      componentDirs: d.summary.components ? Object.keys(d.summary.components) : [],
      untouched: d.summary.components?.denoise?.untouched ?? null,
      hasLens: !!d.summary.analyses?.lens,
      bQuant: d.summary.config?.b_quant || null,
      modelA: d.summary.provenance?.arms?.a?.model ?? null,
      modelB: d.summary.provenance?.arms?.b?.model ?? null,
      // Rows of each per-position plug-in on the worst token (row[0] is the token index).
      worstAnalysisRows: worst
        ? Object.fromEntries(Object.entries(d.chunks.find((c) => c.chunk === worst.chunk)?.analyses ?? {}).map(([n, t]) => [n, t.rows.filter((r) => r[0] === worst.pos).length]))
        : {},
    };
  }, resultUrl ?? null);
}

async function checkResultView(page, facts, tag) {
  await page.waitForSelector("#kl-strip .tok", { timeout: 30000 });
  const n = await page.locator("#kl-strip .tok").count();
  check(n === facts.positions, "#kl-strip has one .tok per position", `${n} tokens, ${facts.positions} positions`);
  const nu = await page.locator("#kl-strip .tok.unscored").count();
  check(nu === facts.unscored, "unscored positions have class 'tok unscored'", `${nu} vs ${facts.unscored}`);
  const withData = await page.locator("#kl-strip .tok[data-chunk][data-pos]").count();
  check(withData === n, "every .tok has data-chunk and data-pos");
  const ends = await page.evaluate(() => {
    const t = document.querySelectorAll("#kl-strip .tok");
    const f = (el) => el && { chunk: Number(el.dataset.chunk), pos: Number(el.dataset.pos) };
    return { first: f(t[0]), last: f(t[t.length - 1]) };
  });
  check(JSON.stringify(ends) === JSON.stringify({ first: facts.first, last: facts.last }), "tokens are in reading order", JSON.stringify(ends));
  const stripText = await page.evaluate(() => [...document.querySelectorAll("#kl-strip .tok")].map((e) => e.textContent).join(""));
  check(stripText === facts.text, "token text is shown verbatim (escaped, whitespace kept)", `${stripText.length} vs ${facts.textLength} characters`);

  const cards = await page.locator(".cards .card").count();
  check(cards === 4, "four headline cards", `${cards}`);
  const floors = await page.locator(".cards .card .card-floor").allTextContents();
  check(floors.length === 4 && floors.every((t) => /floor|no floor/.test(t)), "each card shows its floor", floors.join(" | "));
  const armA = (await page.locator(".arm-a .arm-model").textContent())?.trim();
  const armB = (await page.locator(".arm-b .arm-model").textContent())?.trim();
  check(!!armA && !!armB && armA !== "—", "arms A and B are shown", `A=${armA} B=${armB}`);
  if (facts.bQuant) {
    // B made by --b-quant is titled by what the user gave; the cache file is a detail.
    const want = `${facts.modelA.split("/").pop()} → ${facts.bQuant}`;
    check(armB === want, "a --b-quant arm is titled 'A's file → TYPE'", `${armB} vs ${want}`);
    const detail = (await page.locator(".arm-b .arm-quant").textContent()) ?? "";
    check(detail.includes(facts.modelB), "its cached file is named under it", detail);
  }

  // Tooltip on the first scored token.
  const tok = page.locator("#kl-strip .tok:not(.unscored)").first();
  await tok.scrollIntoViewIfNeeded();
  await tok.hover();
  const tipShown = await page.locator("#tok-tip").isVisible();
  check(tipShown, "hovering a scored token shows #tok-tip");
  const la = await page.locator("#tok-tip #tip-top-a li").count();
  const lb = await page.locator("#tok-tip #tip-top-b li").count();
  check(la === 5 && lb === 5, "#tip-top-a and #tip-top-b have 5 entries each", `${la}, ${lb}`);
  const tipText = (await page.locator("#tok-tip").textContent()) ?? "";
  check(/KL/.test(tipText) && /NLL A/.test(tipText) && /NLL B/.test(tipText), "tooltip shows KL and NLL under A and B");
  await page.screenshot({ path: join(shotDir, `${tag}-tooltip.png`) });
  check(true, `screenshot ${tag}-tooltip.png`);
  await page.mouse.move(0, 0);

  // Plots: the expected ones exist and their canvases hold drawn series (coloured pixels).
  const want = ["residual"];
  if (facts.hasTransplants) want.push("transplants");
  if (facts.hasComponents) want.push(...facts.componentDirs.map((d) => (d === "denoise" ? "components" : `components-${d}`)));
  const names = await page.locator(".plot").evaluateAll((els) => els.map((e) => e.dataset.plot));
  check(want.every((w) => names.includes(w)), "expected plots are present", `have ${names.join(", ")}; want ${want.join(", ")}`);
  for (const name of names) {
    const px = await page.evaluate((name) => {
      const c = document.querySelector(`.plot[data-plot="${name}"] canvas`);
      if (!c) return { drawn: -1, coloured: -1 };
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let drawn = 0, coloured = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i + 3] === 0) continue;
        drawn++;
        const mx = Math.max(d[i], d[i + 1], d[i + 2]), mn = Math.min(d[i], d[i + 1], d[i + 2]);
        if (d[i + 3] > 100 && mx - mn > 40) coloured++;
      }
      return { drawn, coloured };
    }, name);
    check(px.drawn > 500 && px.coloured > 50, `plot "${name}" rendered`, `${px.drawn} drawn pixels, ${px.coloured} in series colours`);
    const btns = await page.locator(`.plot[data-plot="${name}"] .plot-downloads`).textContent();
    check(/Download PNG/.test(btns ?? "") && /Download SVG/.test(btns ?? ""), `plot "${name}" offers PNG and SVG downloads`);
  }
  // Exercise both downloads of the first plot.
  if (names.length > 0) {
    const box = page.locator(`.plot[data-plot="${names[0]}"]`);
    for (const [label, magic] of [["Download PNG", "\x89PNG"], ["Download SVG", "<svg"]]) {
      const [dl] = await Promise.all([page.waitForEvent("download", { timeout: 10000 }), box.getByText(label).click()]);
      const head = readFileSync(await dl.path()).subarray(0, 4).toString("latin1");
      check(head.startsWith(magic.slice(0, 4)), `${label} of "${names[0]}" saves a file`, `${dl.suggestedFilename()}`);
    }
  }

  await checkWorstTokens(page, facts, check);
  await checkKeyboard(page, check);
  await checkLogToggle(page, check);
  await checkLogAxes(page, check);
  await checkWaterfall(page, facts, check);
  await checkContrast(page, check, shotDir, tag);

  const errors = await page.locator(".error").allTextContents();
  check(errors.length === 0, "no .error on the page", errors.join(" | "));
  await page.screenshot({ path: join(shotDir, `${tag}-full.png`), fullPage: true });
  check(true, `screenshot ${tag}-full.png`);
}

// Everything that is not the file itself (or a data:/blob: URL the page makes) is a request
// that left the page: recorded in the list returned, and refused.
async function refuseExternal(context, page) {
  const external = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (/^(file|data|blob):/.test(url)) return route.continue();
    external.push(url);
    return route.abort();
  });
  page.on("request", (r) => {
    if (!/^(file|data|blob):/.test(r.url()) && !external.includes(r.url())) external.push(r.url());
  });
  return external;
}

/** The page at 1280 and at a phone's 390 px: nothing scrolls the page sideways at either
 *  (tables scroll in their own box), every chart fits, and a screenshot of each (docs/serve.md
 *  shows them). Back at 1280 after. */
async function checkWidths(page, name) {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(300);  // charts resize on the window's resize event
    await checkTickLabels(page, check, `${name} at ${width} px`);
    const got = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      view: window.innerWidth,
      wide: [...document.querySelectorAll(".plot, .kind-recommend, .kind-floor, .cards, .arms, section")]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
        .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join(".")} ${Math.round(e.getBoundingClientRect().right)}`)
        .slice(0, 5),
    }));
    check(got.page <= got.view + 1 && got.wide.length === 0, `${name} at ${width} px: nothing scrolls the page sideways`, `page ${got.page} px in ${got.view}; ${got.wide.join(", ")}`);
    await page.screenshot({ path: join(shotDir, `${name}-${width}.png`), fullPage: true });
    // What docs/serve.md shows (`make screenshots` copies it there): the first screen, small.
    await page.screenshot({ path: join(shotDir, `${name}-${width}.jpg`), type: "jpeg", quality: 70 });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function reportMode(context, page) {
  const external = await refuseExternal(context, page);
  const t0 = Date.now();
  await page.goto(pathToFileURL(resolve(target)).href);
  await page.waitForSelector("#kl-strip .tok", { timeout: 30000 });
  console.log(`time to ready: ${Date.now() - t0} ms`);
  const facts = await pageFacts(page, null);
  check(facts.positions > 0, "the report holds positions", `${facts.positions}`);
  await checkResultView(page, facts, "report");
  const [dl] = await Promise.all([page.waitForEvent("download", { timeout: 10000 }), page.getByText("Download JSON").click()]);
  const saved = JSON.parse(readFileSync(await dl.path(), "utf8"));
  const savedN = saved.chunks.reduce((s, c) => s + c.tokens.length, 0);
  check(savedN === facts.positions && !!saved.summary, "Download JSON saves the result", dl.suggestedFilename());
  await checkFixedColours(context, resolve(target), shotDir, check);
  await checkWidths(page, "report");
  check(external.length === 0, "no request left the page", external.slice(0, 5).join(", "));
}

// A report whose every string field holds markup ("<!--<script>", "</script><script>…",
// "<img onerror>"): the page draws, the strings show as text, nothing of them runs, and the
// page leads with the integrity warning (the file was edited after it was sealed).
async function hostileMode(context, page) {
  const external = await refuseExternal(context, page);
  const dialogs = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    d.dismiss();
  });
  await page.goto(pathToFileURL(resolve(target)).href);
  await page.waitForSelector("#kl-strip .tok", { timeout: 30000 });
  const got = await page.evaluate(() => ({
    pwned: window.__pwned ?? null,
    scripts: document.querySelectorAll("script").length,
    handlers: document.querySelectorAll("[onerror], [onload], [onclick], [onmouseover]").length,
    injected: document.querySelectorAll("img, iframe, object, embed").length,
    tokens: document.querySelectorAll("#kl-strip .tok").length,
    warning: document.querySelector(".integrity-warning")?.textContent ?? "",
    text: document.body.innerText,
  }));
  check(got.pwned === null, "nothing the strings hold ran", String(got.pwned));
  check(dialogs.length === 0, "no dialog opened", dialogs.join(" | "));
  check(got.scripts === 2, "the page has only its own two scripts", `${got.scripts}`);
  check(got.handlers === 0 && got.injected === 0, "no element came from the strings", `${got.handlers} handlers, ${got.injected} elements`);
  check(got.tokens > 0, "the page drew its tokens", `${got.tokens}`);
  check(/fails its integrity check/.test(got.warning), "the page leads with the integrity warning", got.warning);
  check(got.text.includes("<!--<script>") && got.text.includes("<img src=x onerror="), "the strings show as text", "");
  await page.screenshot({ path: join(shotDir, "hostile.png"), fullPage: false });
  check(external.length === 0, "no request left the page", external.slice(0, 5).join(", "));
}

// A sweep's or floor's report: the text show prints, as is, under its kind; nothing fetched.
async function summaryMode(context, page) {
  const external = await refuseExternal(context, page);
  await page.goto(pathToFileURL(resolve(target)).href);
  await page.waitForSelector("pre.show-text, .error", { timeout: 30000 });
  const got = await page.evaluate(() => ({
    shown: document.querySelector("pre.show-text")?.textContent ?? null,
    text: window.HD_DATA?.text ?? null,
    kind: window.HD_DATA?.kind ?? null,
    heading: document.querySelector(".summary-result h2")?.textContent ?? "",
  }));
  check(got.text !== null && got.text.length > 0 && got.shown === got.text, "the page shows the text show prints, as is", `${got.shown?.length} vs ${got.text?.length} characters`);
  check(got.heading.includes(got.kind ?? "?"), "the heading names the kind", got.heading);
  const kindCheck = { sweep: checkSweep, floor: checkFloor, recommend: checkRecommend, reference: checkReference, generate: checkGenerate }[got.kind];
  if (check(!!kindCheck, `the test knows the kind '${got.kind}'`)) await kindCheck(page, check);
  await checkContrast(page, check, shotDir, `summary-${got.kind}`);
  const errors = await page.locator(".error").allTextContents();
  check(errors.length === 0, "no .error on the page", errors.join(" | "));
  await page.screenshot({ path: join(shotDir, `summary-${got.kind}.png`), fullPage: true });
  await checkWidths(page, `summary-${got.kind}`);
  check(external.length === 0, "no request left the page", external.slice(0, 5).join(", "));
}

/** What the compare checks expect of each run, read from wire documents (format 2). */
function compareFacts(docs) {
  return docs.map((d) => {
    const b = d.summary.provenance?.arms?.b ?? {};
    let scored = 0;
    for (const c of d.chunks) for (const s of c.scored) scored += s === 1 ? 1 : 0;
    return {
      kl: d.summary.kl_mean,
      bpw: b.model_size > 0 && b.n_params > 0 ? (8 * b.model_size) / b.n_params : null,
      scored,
      tokens: d.chunks.map((c) => `${c.chunk}:${c.tokens.join(" ")}`).join("|"),
    };
  });
}

async function compareMode(context, page) {
  const external = await refuseExternal(context, page);
  await page.goto(pathToFileURL(resolve(target)).href);
  const docs = await page.evaluate(() => window.HD_DATA.runs.map((r) => r.result));
  await checkCompare(page, compareFacts(docs), check, shotDir, "report");
  await checkWidths(page, "compare");
  await checkContrast(page, check, shotDir, "compare");
  const errors = await page.locator(".error").allTextContents();
  check(errors.length === 0, "no .error on the page", errors.join(" | "));
  check(external.length === 0, "no request left the page", external.slice(0, 5).join(", "));
}

async function serveMode(page) {
  await page.goto(target);
  await page.waitForSelector("#models table, #models .error, #models .empty", { timeout: 30000 });
  check(!new URL(page.url()).searchParams.has("token"), "the token leaves the address bar", page.url());
  // The cookie the page got carries the token (page.request shares the browser's cookies, and
  // its refusal logs nothing to the page's console); a POST that is not JSON is refused even so,
  // since a page of another origin could send text/plain without asking.
  const runsUrl = new URL("/api/runs", page.url()).href;
  const runs = await page.request.get(runsUrl);
  check(runs.status() === 200, "the page's cookie carries the token", `${runs.status()} ${await runs.text()}`);
  const plain = await page.request.post(runsUrl, { headers: { "Content-Type": "text/plain" }, data: "{}" });
  check(plain.status() === 415 && /application\/json/.test(await plain.text()), "a text/plain POST is refused with 415", `${plain.status()} ${await plain.text()}`);
  check(await page.locator("#models table").isVisible(), "models table is shown", (await page.locator("#models").textContent())?.slice(0, 200));
  const hasA = await page.locator(`#arm-a option[value="${modelA.replace(/"/g, '\\"')}"]`).count();
  if (!check(hasA === 1, "#arm-a offers MODEL_A_PATH", modelA)) return;
  await page.selectOption("#arm-a", modelA);
  await page.selectOption("#b-quant", quantType);
  check((await page.locator("#arm-b").inputValue()) === "", "choosing a quant type clears #arm-b");
  const files = (await page.locator("#text-file option").evaluateAll((os) => os.map((o) => o.value))).filter((v) => v);
  if (files.length > 0) {
    await page.selectOption("#text-file", files[0]);
    check(true, "text: file " + files[0]);
  } else {
    await page.fill("#text", PROSE);
    check(true, `text: pasted ${PROSE.length} characters`);
  }
  await page.fill("#chunk", "64");
  await page.fill("#max-chunks", "2");
  const [resp] = await Promise.all([
    page.waitForResponse((r) => new URL(r.url()).pathname === "/api/runs" && r.request().method() === "POST", { timeout: 30000 }),
    page.click("#run-submit"),
  ]);
  const body = await resp.json().catch(() => ({}));
  if (!check(resp.status() === 201 && body.id !== undefined, "POST /api/runs → 201 {id}", `${resp.status()} ${JSON.stringify(body)}`)) return;
  const id = String(body.id);
  await page.waitForSelector(`#runs [data-run-id="${id}"]`, { timeout: 10000 });
  check(true, `run ${id} appears in #runs`);
  const outcome = await (
    await page.waitForFunction(
      (id) => {
        const row = [...document.querySelectorAll("#runs [data-run-id]")].find((r) => r.dataset.runId === id);
        if (!row) return false;
        const st = row.dataset.state;
        if (st === "done" && row.querySelector(".result-link")) return "done";
        if (st === "failed" || st === "stopped") return `${st}: ${row.querySelector(".run-message")?.textContent ?? ""}`;
        return false;
      },
      id,
      { timeout: 120000, polling: 250 },
    )
  ).jsonValue();
  if (!check(outcome === "done", `run ${id} finishes with a .result-link`, String(outcome))) return;
  const link = page.locator(`#runs [data-run-id="${id}"] .result-link`);
  const href = await link.getAttribute("href");
  const name = decodeURIComponent((href ?? "").replace(/^#\/experiment\//, ""));
  const listed = await page
    .waitForFunction((href) => !!document.querySelector(`#experiments a[href="${CSS.escape(href).replace(/\\/g, "\\\\")}"]`) || [...document.querySelectorAll("#experiments a")].some((a) => a.getAttribute("href") === href), href, { timeout: 10000 })
    .then(() => true, () => false);
  check(listed, "the finished experiment is listed in #experiments", name);
  await page.screenshot({ path: join(shotDir, "serve-home.png"), fullPage: true });
  check(true, "screenshot serve-home.png");
  await checkWidths(page, "serve-home");  // the lists, the form and the runs at 1280 and 390 px
  await link.click();
  await page.waitForSelector("#kl-strip .tok", { timeout: 60000 });
  const resultUrl = `/api/experiments/${encodeURIComponent(name)}/result`;
  const facts = await pageFacts(page, resultUrl);
  await checkResultView(page, facts, "serve");
  await checkWidths(page, "serve-result");
  for (const f of ["hdy", "json", "csv"]) {
    const a = page.locator(`.downloads a.download-${f}`);
    const h = (await a.count()) ? await a.getAttribute("href") : null;
    const want = `/api/experiments/${encodeURIComponent(name)}/download?format=${f}`;
    if (!check(h === want, `download link for ${f}`, `${h}`)) continue;
    const got = await page.evaluate(async (u) => {
      const r = await fetch(u);
      const b = new Uint8Array(await r.arrayBuffer());
      return { status: r.status, size: b.length, head: String.fromCharCode(...b.subarray(0, 16)) };
    }, h);
    const okHead = f === "hdy" ? got.head.startsWith("SQLite format 3") : f === "json" ? got.head.trimStart().startsWith("{") : got.size > 0;
    check(got.status === 200 && okHead, `GET ${h}`, `HTTP ${got.status}, ${got.size} bytes`);
  }
  // The run against itself on the compare page: a known answer, every dot on the diagonal.
  const doc = await page.evaluate(async (u) => (await fetch(u)).json(), resultUrl);
  await page.evaluate((n) => (location.hash = `#/compare/${encodeURIComponent(n)},${encodeURIComponent(n)}`), name);
  await checkCompare(page, compareFacts([doc, doc]), check, shotDir, "serve");
  const note = (await page.locator(".scatter-box .plot-note").textContent()) ?? "";
  check(/the larger KL: .* at 0 \(0\.0 %\), .* at 0 \(0\.0 %\)/.test(note), "a run against itself: no token has the larger KL on either side", note.slice(0, 120));
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => {
    // A browser's own favicon request is not the page's doing.
    if (m.type() === "error" && !/favicon\.ico/.test(m.location()?.url ?? "")) pageErrors.push(`${m.text()} ${m.location()?.url ?? ""}`.trim());
  });
  if (mode === "report") await reportMode(context, page);
  else if (mode === "summary") await summaryMode(context, page);
  else if (mode === "compare") await compareMode(context, page);
  else if (mode === "hostile") await hostileMode(context, page);
  else if (mode === "timing") await pageTimingMode(page, target, modelA.split(","), check);
  else await serveMode(page);
  check(pageErrors.length === 0, "no script errors in the page", pageErrors.slice(0, 3).join(" | "));
} catch (e) {
  check(false, "test ran to the end", e?.stack ?? String(e));
} finally {
  await browser.close();
}
console.log(failures === 0 ? "PASS" : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
