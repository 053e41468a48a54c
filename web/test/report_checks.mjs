// The report page's "where at a glance" checks (issue 21), run by ui.test.mjs on a diff's page:
// worst tokens, the pinned panel, keyboard-only pinning, log toggles, the waterfall's sum, text
// contrast in both colour schemes, and a colour scale that is the same in every report.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export async function checkWorstTokens(page, facts, check) {
  const first = await page.locator("#worst-tokens tbody tr").first();
  const at = { chunk: Number(await first.getAttribute("data-chunk")), pos: Number(await first.getAttribute("data-pos")) };
  check(JSON.stringify(at) === JSON.stringify(facts.worst), "the worst-token table's first row is the largest-KL token", `${JSON.stringify(at)} vs ${JSON.stringify(facts.worst)}`);
  await first.click();
  const pinned = await page.evaluate(() => ({ ...document.querySelector("#tok-panel").dataset }));
  check(Number(pinned.chunk) === at.chunk && Number(pinned.pos) === at.pos, "clicking it pins that token", JSON.stringify(pinned));
  const tops = await page.locator("#tok-panel #panel-top-a li").count();
  check(tops === 5, "the panel shows A's top-5", `${tops}`);
  const cursorAt = await page.evaluate(() => ({ ...document.querySelector("#tok-cursor")?.dataset }));
  check(Number(cursorAt.chunk) === at.chunk && Number(cursorAt.pos) === at.pos, "the strip's cursor moved to it", JSON.stringify(cursorAt));
  if (facts.hasTransplants) {
    const charts = await page.locator("#tok-panel .mini-chart").count();
    check(charts >= 2, "the panel draws this position's residual and transplant curves", `${charts} charts`);
  }
  // Per-position plug-in rows (the lens: one per layer) of the pinned token, as stored.
  if (facts.hasLens) check((facts.worstAnalysisRows?.lens ?? 0) > 0, "a run with the lens stores lens rows for its worst token", JSON.stringify(facts.worstAnalysisRows));
  for (const [name, want] of Object.entries(facts.worstAnalysisRows ?? {})) {
    const got = await page.locator(`#tok-panel .panel-analysis[data-analysis="${name}"] tbody tr`).count();
    check(got === want && want > 0, `the panel lists this position's ${name} rows`, `${got} vs ${want}`);
  }
  // Sorting by |ΔNLL| re-ranks every token: the first row then has the largest |ΔNLL|.
  await page.locator('#worst-tokens .sort-button[data-key="dnll"]').click();
  const sorted = await page.evaluate(() => document.querySelector('#worst-tokens th[aria-sort="descending"] .sort-button')?.dataset.key);
  check(sorted === "dnll", "a header click sorts by that column", `${sorted}`);
  await page.locator('#worst-tokens .sort-button[data-key="kl"]').click();
}

export async function checkKeyboard(page, check) {
  await page.evaluate(() => document.activeElement?.blur());
  await page.evaluate(() => window.scrollTo(0, 0));
  let reached = false;
  for (let i = 0; i < 300 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() => document.activeElement?.id === "kl-strip");
  }
  if (!check(reached, "Tab reaches the text strip")) return;
  for (let i = 0; i < 3; i++) await page.keyboard.press("ArrowRight");
  await page.keyboard.press("Enter");
  const got = await page.evaluate(() => ({ cursor: { ...document.querySelector("#tok-cursor")?.dataset }, panel: { ...document.querySelector("#tok-panel").dataset } }));
  check(!!got.cursor.pos && got.cursor.pos === got.panel.pos && got.cursor.chunk === got.panel.chunk, "arrow keys and Enter pin a token without the mouse", JSON.stringify(got));
}

/** No log axis reaches below 1e-9 (a floor of 0 or of rounding would stretch it over empty
 *  decades): such a floor is the labelled baseline instead. Every chart is set to log first. */
export async function checkLogAxes(page, check) {
  const boxes = page.locator(".plot .plot-log:not([disabled])");
  const n = await boxes.count();
  const clicked = [];
  for (let i = 0; i < n; i++) if (!(await boxes.nth(i).isChecked())) await boxes.nth(i).click(), clicked.push(i);
  const charts = await page.evaluate(() =>
    [...document.querySelectorAll(".plot-chart")].map((c) => ({ log: c.dataset.logY, range: c.dataset.yRange, baseline: c.dataset.floorBaseline ?? null, below: c.dataset.floorBelowMin === "true" })),
  );
  const logs = charts.filter((c) => c.log === "true");
  const low = logs.filter((c) => !(Number((c.range ?? "0").split(",")[0]) >= 1e-9 * (1 - 1e-12)));
  check(logs.length > 0 && low.length === 0, "no log axis reaches below 1e-9", `${logs.length} log charts; below: ${JSON.stringify(low)}`);
  // Every log chart whose floor is below 1e-9 somewhere draws the baseline, and no other does.
  const wrong = logs.filter((c) => (c.baseline === "floor ≤ 1e-9") !== c.below);
  check(wrong.length === 0, "a floor below 1e-9 is the labelled baseline 'floor ≤ 1e-9', on exactly those charts", `${logs.filter((c) => c.below).length} with such a floor; wrong: ${JSON.stringify(wrong)}`);
  for (const i of clicked) await boxes.nth(i).click();  // back as the page chose
}

/** No chart's x tick labels overprint one another (plots.ts records the smallest gap). */
export async function checkTickLabels(page, check, name) {
  const gaps = await page.evaluate(() => [...document.querySelectorAll(".plot-chart")].map((c) => c.dataset.xTickClearance ?? ""));
  if (gaps.length === 0) return;  // a page without charts (serve's lists)
  const drawn = gaps.filter((g) => g !== "").map(Number);
  check(drawn.length > 0 && drawn.every((g) => g >= 0), `${name}: no chart's x tick labels overlap`, gaps.join(", "));
}

export async function checkLogToggle(page, check) {
  const plot = page.locator(".plot").filter({ has: page.locator(".plot-log:not([disabled])") }).first();
  if (!check((await plot.count()) === 1, "a line plot offers a log y toggle")) return;
  // uPlot draws its axes on the canvas: the chart box records its y scale's range.
  const ticks = () => plot.evaluate((p) => [p.querySelector(".plot-chart").dataset.logY, p.querySelector(".plot-chart").dataset.yRange]);
  const before = await ticks();
  await plot.locator(".plot-log").click();
  const after = await ticks();
  check(before[0] !== after[0] && before[1] !== after[1], "the log toggle changes the y axis", `log ${before[0]}→${after[0]}, y ${before[1]}→${after[1]}`);
  // The SVG export follows the axis on screen: its y ticks are then whole decades.
  const isLog = after[0] === "true" || after[0] === "1";
  const [dl] = await Promise.all([page.waitForEvent("download", { timeout: 10000 }), plot.getByText("Download SVG").click()]);
  const svgText = readFileSync(await dl.path(), "utf8");
  const yTicks = [...svgText.matchAll(/text-anchor="end">([^<]+)</g)].map((m) => Number(m[1]));
  const decades = yTicks.length > 1 && yTicks.every((v) => v > 0 && Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9);
  check(decades === isLog, "the SVG export is drawn on the axis the chart shows", `log ${after[0]}, y ticks ${yTicks.join(", ")}`);
  const legend = await plot.locator(".u-legend .u-series").nth(1).textContent();
  check(!/—/.test(legend ?? "—"), "the legend shows values without hovering", legend ?? "");
}

export async function checkWaterfall(page, facts, check) {
  if (!facts.hasComponents) return;
  const w = await page.evaluate(() => ({
    bars: [...document.querySelectorAll("#waterfall .wf-bar")].map((b) => Number(b.getAttribute("data-value"))),
    total: Number(document.querySelector("#waterfall")?.getAttribute("data-total")),
    verdict: document.querySelector("#verdict")?.textContent ?? "",
  }));
  const sum = w.bars.reduce((a, b) => a + b, 0);
  check(w.bars.length > 2 && Math.abs(sum - w.total) <= 1e-9 * Math.max(1, Math.abs(w.total)), "the waterfall's bars sum to the total KL", `${sum} vs ${w.total} (${w.bars.length} bars)`);
  check(w.total === facts.untouched, "the waterfall's total is the run's untouched KL", `${w.total} vs ${facts.untouched}`);
  check(/\d+ % of the KL enters/.test(w.verdict), "a one-sentence verdict says where the KL comes from", w.verdict);
}

/** The lowest text contrast on the page: every element with text of its own, against the first
 *  opaque background behind it (WCAG relative luminance). */
export async function lowestContrast(page) {
  return page.evaluate(() => {
    const rgb = (s) => (s.match(/[\d.]+/g) ?? []).map(Number);
    const lum = ([r, g, b]) => {
      const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4));
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const bgOf = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c;
      }
      return [255, 255, 255];
    };
    let worst = { ratio: 99, text: "", style: "" };
    for (const el of document.querySelectorAll("body *")) {
      if (!el.checkVisibility?.() || el.closest("svg, canvas, .u-legend .u-marker")) continue;
      const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!own) continue;
      const fg = rgb(getComputedStyle(el).color), bg = bgOf(el);
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < worst.ratio) worst = { ratio, text: el.textContent.slice(0, 30), style: `${el.tagName}.${el.className} ${getComputedStyle(el).color} on ${bg}` };
    }
    return worst;
  });
}

/** A checksum of the first chart canvas's pixels, or null: a chart drawn again in the other
 *  scheme's colours has other pixels. */
function canvasSum(page) {
  return page.evaluate(() => {
    const c = document.querySelector(".plot canvas, canvas.token-scatter");
    if (!c) return null;
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let sum = 0;
    for (let i = 0; i < d.length; i++) sum = (sum * 31 + d[i]) % 1000000007;
    return sum;
  });
}

export async function checkContrast(page, check, shotDir, tag) {
  const pixels = {}; // per scheme: the chart's pixel checksum
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.waitForTimeout(100);
    pixels[scheme] = await canvasSum(page);
    const w = await lowestContrast(page);
    check(w.ratio >= 4.5, `text contrast ≥ 4.5:1 everywhere (${scheme})`, `lowest ${w.ratio.toFixed(2)}: "${w.text}" ${w.style}`);
    await page.screenshot({ path: join(shotDir, `${tag}-${scheme}.png`), fullPage: true });
  }
  if (pixels.light !== null)
    check(pixels.dark !== pixels.light, "charts draw again in the other scheme's colours", `pixel checksum ${pixels.light} → ${pixels.dark}`);
  await page.emulateMedia({ colorScheme: "light" });
}

/** A second report whose last chunk's KL is 1000× larger: on one fixed scale every token the
 *  two share keeps its colour, where a per-run scale would repaint them all. */
export async function checkFixedColours(browser, file, shotDir, check) {
  const html = readFileSync(file, "utf8");
  const start = html.indexOf("window.HD_DATA = ") + "window.HD_DATA = ".length;
  const end = html.indexOf(";</script>", start);
  const doc = JSON.parse(html.slice(start, end).replaceAll("<\\/", "</"));
  const lastChunk = doc.chunks[doc.chunks.length - 1];
  lastChunk.kl = lastChunk.kl.map((v) => (v === null ? v : Math.min(50, v * 1000)));
  const other = join(shotDir, "scaled.html");
  writeFileSync(other, html.slice(0, start) + JSON.stringify(doc).replaceAll("</", "<\\/") + html.slice(end));
  const colours = async (path) => {
    const page = await browser.newPage();
    await page.goto(pathToFileURL(path).href);
    await page.waitForSelector("#kl-strip .tok");
    const c = await page.evaluate((last) => [...document.querySelectorAll("#kl-strip .tok")].filter((t) => Number(t.dataset.chunk) !== last).map((t) => t.style.backgroundColor), lastChunk.chunk);
    await page.close();
    return c;
  };
  const [a, b] = [await colours(file), await colours(other)];
  const differ = a.filter((c, i) => c !== b[i]).length;
  const shaded = a.filter((c) => c).length;
  check(a.length === b.length && differ === 0 && shaded > 0, "a token's colour depends on its KL only, not on the run's maximum", `${differ} of ${a.length} differ, ${shaded} shaded`);
}
