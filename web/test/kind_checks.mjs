// Checks of the pages that are not one diff (issue 21): a sweep's, a floor's and a recipe's
// (ui.test.mjs summary mode) and the compare page (compare mode, and serve's #/compare/).
// Each reads what it expects from the document in the page, never from a hard-coded answer.
import { join } from "node:path";

/** Sorting by a numeric column descending puts its largest value first. */
async function checkSortsDescending(page, tableSel, label, values, check) {
  const button = page.locator(`${tableSel} th .sort-button`, { hasText: label }).first();
  if (!check((await button.count()) === 1, `${tableSel} sorts by "${label}"`)) return;
  const colIndex = Number(await button.getAttribute("data-col"));
  await button.click();
  let state = await page.locator(`${tableSel} th[aria-sort]`).getAttribute("aria-sort");
  if (state !== "descending") {
    await button.click();
    state = await page.locator(`${tableSel} th[aria-sort]`).getAttribute("aria-sort");
  }
  const firstCell = await page.locator(`${tableSel} tbody tr`).first().locator("td").nth(colIndex).textContent();
  const max = Math.max(...values.filter((v) => typeof v === "number"));
  const shown = Number.parseFloat(String(firstCell).replace(/[^0-9eE.+-].*$/, ""));
  check(state === "descending" && Math.abs(shown - max) <= Math.abs(max) * 1e-3 + 1e-12, `sorting "${label}" descending puts the largest first`, `${firstCell} vs ${max}`);
}

export async function checkSweep(page, check) {
  const r = await page.evaluate(() => window.HD_DATA.sweep);
  const players = r.shapley_players ?? [];
  const plot = await page.locator('.plot[data-plot="shapley"]').count();
  check(players.length === 0 || plot === 1, "a sweep draws its Shapley bars", `${players.length} players, ${plot} plot`);
  const rows = await page.locator("table.combinations tbody tr").count();
  check(rows === r.combinations.length && rows === 2 ** r.settings.length, "the table lists all 2^k combinations", `${rows} rows, ${r.settings.length} settings`);
  await checkSortsDescending(page, "table.combinations", "mean KL", r.combinations.map((c) => (c.possible ? c.kl_mean : null)), check);
  const cells = await page.locator(".heatmap .heat-cell").count();
  const k = r.settings.length;
  check((r.interactions ?? []).length === 0 || cells === k * (k - 1), "the interaction heatmap has a cell per ordered pair", `${cells}`);
}

export async function checkFloor(page, check) {
  const r = await page.evaluate(() => window.HD_DATA.floor);
  const cells = await page.locator("td.floor-cell:not(.missing)").count();
  check(cells === r.rows.length, "the floor map has a cell per run", `${cells} cells, ${r.rows.length} rows`);
  const identical = await page.locator("td.floor-cell.identical").count();
  check(identical === r.rows.filter((x) => x.identical).length, "cells of bitwise-identical runs say so", `${identical}`);
  const fas = new Set(r.rows.map((x) => x.flash_attn)).size;
  check((await page.locator("figure.floor-map").count()) === fas, "one map per flash-attention setting", `${fas}`);
  // The answer first: the ubatches where every run is bitwise the reference, and the smallest
  // where one is not.
  const order = await page.evaluate(() => {
    const a = document.querySelector(".floor-answer"), m = document.querySelector(".floor-maps");
    return a && m ? a.getBoundingClientRect().top < m.getBoundingClientRect().top : null;
  });
  check(order === true, "the floor page leads with its answer, above the maps", String(order));
  const ubs = [...new Set(r.rows.map((x) => x.n_ubatch))].sort((a, b) => a - b);
  const invariant = ubs.filter((u) => r.rows.filter((x) => x.n_ubatch === u).every((x) => x.identical));
  const changing = ubs.filter((u) => !invariant.includes(u));
  const got = await page.locator(".floor-answer").evaluate((p) => [p.dataset.invariant, p.dataset.smallestChanging]);
  check(got[0] === invariant.join(",") && got[1] === (changing.length ? String(changing[0]) : ""), "it names the splits that change no bit and the smallest that does", `${JSON.stringify(got)} vs ${invariant} / ${changing[0]}`);
}

export async function checkRecommend(page, check) {
  const r = await page.evaluate(() => window.HD_DATA.recommend);
  const points = await page.locator(".ladder .ladder-point").count();
  check(points === r.held_out.length, "the held-out ladder has a point per model", `${points} vs ${r.held_out.length}`);
  const recipe = await page.locator(".ladder .ladder-point.highlight").getAttribute("data-label");
  check(recipe === r.held_out[0].name, "the recipe is the highlighted point", `${recipe}`);
  await checkSortsDescending(page, "table.held-out", "mean KL", r.held_out.map((x) => x.kl_mean), check);
  // The answer first: the recipe's held-out KL against the stock type of its size, and the ratio.
  const order = await page.evaluate(() => {
    const a = document.querySelector(".recommend-lead"), l = document.querySelector(".kind-recommend .ladder");
    return a && l ? a.getBoundingClientRect().top < l.getBoundingClientRect().top : null;
  });
  check(order === true, "the recipe page leads with its result, above the ladder", String(order));
  const stock = r.held_out.slice(1).find((x) => x.name === r.target.size) ?? r.held_out.slice(1).filter((x) => x.bytes >= r.held_out[0].bytes).sort((a, b) => a.bytes - b.bytes)[0];
  check(!!stock && r.stock_at_size === stock.name, "the document names the stock type of the recipe's size", `${r.stock_at_size} vs ${stock?.name}`);
  const ratio = Number(await page.locator(".recommend-lead").getAttribute("data-ratio"));
  const want = stock ? r.held_out[0].kl_mean / stock.kl_mean : NaN;
  check(!!stock && Math.abs(ratio - want) <= 1e-12 * Math.abs(want), "its ratio is the recipe's KL over the same-size stock type's", `${ratio} vs ${want} (${stock?.name})`);
  const lead = (await page.locator(".recommend-lead .lead-kl").textContent()) ?? "";
  check(!!stock && lead.includes(stock.name), "the lead names that stock type", lead);
  const cmd = (await page.locator(".recommend-command code").textContent()) ?? "";
  check(cmd.startsWith("llama-quantize --tensor-type-file tensor-types.txt ") && cmd.endsWith(` ${r.base}`), "the page gives the llama-quantize command", cmd);
}

export async function checkReference(page, check) {
  const r = await page.evaluate(() => window.HD_DATA.reference);
  const rows = await page.locator("table.reference-taps tbody tr").count();
  check(rows === r.taps.length, "the reference table has a row per tap", `${rows} vs ${r.taps.length}`);
  check((await page.locator('.plot[data-plot="reference-taps"]').count()) === 1, "the taps chart is drawn");
  if (r.check) {
    const over = await page.locator('table.reference-taps tbody tr[data-over="true"]').count();
    check(over === r.check.taps.filter((t) => t.over).length, "taps over their tolerance are marked", `${over}`);
    const verdict = (await page.locator(".kind-reference .verdict").textContent()) ?? "";
    const want = r.check.passed ? /^Passed/ : new RegExp(`first divergent tap ${r.check.first_divergent_tap}`);
    check(want.test(verdict), "the verdict names the first divergent tap", verdict);
  }
}

/** The compare page: `runs` are decoded-free facts the caller read from the documents. */
export async function checkCompare(page, runs, check, shotDir, tag) {
  await page.waitForSelector(".compare table.compare-runs", { timeout: 60000 });
  const rows = await page.locator("table.compare-runs tbody tr").count();
  check(rows === runs.length, "the compare table has a row per run", `${rows} vs ${runs.length}`);
  await checkSortsDescending(page, "table.compare-runs", "mean KL", runs.map((r) => r.kl), check);
  const pts = await page.locator(".ladder .ladder-point").evaluateAll((els) => els.map((e) => ({ x: Number(e.dataset.x), y: Number(e.dataset.y) })));
  const want = runs.filter((r) => r.bpw !== null).map((r) => ({ x: r.bpw, y: r.kl }));
  const near = (a, b) => Math.abs(a - b) <= Math.abs(b) * 1e-9;
  check(pts.length === want.length && want.every((w) => pts.some((p) => near(p.x, w.x) && near(p.y, w.y))), "each run is a ladder point at its B's bpw and mean KL", JSON.stringify(pts));
  // Each run named by what differs between the runs, and drawn in its own colour.
  const named = await page.locator(".ladder .ladder-point").evaluateAll((els) => els.map((e) => ({ label: e.dataset.label, color: e.dataset.color })));
  check(new Set(named.map((p) => p.label)).size === named.length, "every run has its own name on the ladder", JSON.stringify(named));
  check(named.length < 2 || new Set(named.map((p) => p.color)).size === Math.min(named.length, 8), "every run has its own colour on the ladder", JSON.stringify(named));
  await page.locator('.ladder input[value="bytes"]').check();
  const xs = await page.locator(".ladder .ladder-point").evaluateAll((els) => els.map((e) => Number(e.dataset.x)));
  check(xs.length === want.length && xs.every((x) => x > 100), "the ladder switches to file size", JSON.stringify(xs));
  const overlay = await page.locator('.plot[data-plot="compare-residual"] .u-legend .u-series').count();
  check(overlay >= runs.length, "the residual overlay has a series per run", `${overlay}`);
  if (runs.length >= 2) {
    const n = Number(await page.locator("canvas.token-scatter").getAttribute("data-points"));
    const paired = runs[0].scored === runs[1].scored && runs[0].tokens === runs[1].tokens ? runs[0].scored : null;
    check(paired === null || n === paired, "the paired scatter has a dot per position both runs scored", `${n} vs ${paired}`);
  }
  await page.screenshot({ path: join(shotDir, `${tag}-compare.png`), fullPage: true });
  check(true, `screenshot ${tag}-compare.png`);
}

/** A generate run: a section per prompt, the parting token marked in both completions of each
 * prompt that parts, a transplant table where one ran, and the prompts' texts (attacker-
 * controlled strings among them) shown as text: nothing they hold became an element. */
export async function checkGenerate(page, check) {
  const r = await page.evaluate(() => window.HD_DATA.generate);
  const sections = await page.locator("section.generate-prompt").count();
  check(sections === r.prompts.length, "a section per prompt", `${sections} vs ${r.prompts.length}`);
  const parted = r.prompts.filter((p) => p.b[0].parted >= 0).length;
  const marks = await page.locator(".generate-parting").count();
  check(marks === 2 * parted, "the parting token is marked in A's and B's completion of each prompt that parts", `${marks} marks, ${parted} parted`);
  const transplants = r.prompts.filter((p) => p.b.some((t) => t.transplant?.parts)).length;
  const tables = await page.locator("table.generate-steps").count();
  check(tables === transplants, "a transplant table where one ran", `${tables} vs ${transplants}`);
  const injected = await page.locator("section.generate-prompt img, section.generate-prompt script, [onerror]").count();
  check(injected === 0, "no element came from a prompt or token text", `${injected}`);
  const texts = await page.locator("pre.generate-text").allTextContents();
  check(r.prompts.every((p, i) => texts[i] === p.text), "every prompt's text shows as it is", "");
}
