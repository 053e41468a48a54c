// Writes a report page the way src/report/html.cpp does, for testing the UI without the
// C++ build:  node web/test/make-report.mjs BUILD_DIR RESULT.json OUT.html
// BUILD_DIR holds app.js and app.css (scripts/web.sh output).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [dir, resultPath, out] = process.argv.slice(2);
if (!dir || !resultPath || !out) {
  console.error("usage: node make-report.mjs BUILD_DIR RESULT.json OUT.html");
  process.exit(2);
}
// Same as html.cpp's script_safe: "</" could end the <script> element early.
const scriptSafe = (s) => s.replaceAll("</", "<\\/");
const css = readFileSync(join(dir, "app.css"), "utf8");
const js = readFileSync(join(dir, "app.js"), "utf8");
const data = JSON.stringify(JSON.parse(readFileSync(resultPath, "utf8")));
const html =
  '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n' +
  '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
  "<title>heterodyne report</title>\n<style>" + css + "</style></head>\n" +
  '<body><div id="app"></div>\n<script>window.HD_DATA = ' + scriptSafe(data) + ";</script>\n" +
  "<script>" + scriptSafe(js) + "</script></body></html>\n";
writeFileSync(out, html);
console.log(`wrote ${out} (${html.length} bytes)`);
