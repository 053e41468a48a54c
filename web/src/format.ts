// Number and text formatting shared by the report and the serve UI.
import type { Num } from "./types";

export function isNum(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

export const DASH = "—";

/** Significant-digit formatting that stays readable for KL values around 1e-6..10. */
export function fmt(v: Num, digits = 4): string {
  if (!isNum(v)) return DASH;
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a < 1e-3 || a >= 1e6) return v.toExponential(Math.max(0, digits - 2));
  // toPrecision would switch to exponents for large numbers: 12345 → "1.235e+4".
  if (Number.isInteger(v) || a >= 10 ** digits) return v.toFixed(0);
  return trimZeros(v.toPrecision(digits));
}

function trimZeros(s: string): string {
  return s.includes(".") && !s.includes("e") ? s.replace(/\.?0+$/, "") : s;
}

export function fmtPct(v: Num, decimals = 2): string {
  return isNum(v) ? (v * 100).toFixed(decimals) + "%" : DASH;
}

/** "x ± ci" with the ci in the same style; a missing ci shows the value alone. */
export function fmtPm(v: Num, ci: Num, f: (x: Num) => string = fmt): string {
  if (!isNum(v)) return DASH;
  return isNum(ci) ? `${f(v)} ± ${f(ci)}` : f(v);
}

export function fmtFixed(v: Num, decimals = 2): string {
  return isNum(v) ? v.toFixed(decimals) : DASH;
}

export function fmtBytes(v: Num): string {
  if (!isNum(v)) return DASH;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let x = v;
  let i = 0;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return `${i === 0 ? x : x.toFixed(1)} ${units[i]}`;
}

export function fmtParams(v: Num): string {
  if (!isNum(v)) return DASH;
  if (v >= 1e9) return (v / 1e9).toFixed(2) + "B";
  if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + "K";
  return String(v);
}

/** Server timestamps may come as ISO strings or as Unix seconds. */
export function fmtTime(v: string | number | undefined | null): string {
  if (v === undefined || v === null || v === "") return DASH;
  const d = typeof v === "number" ? new Date(v < 1e12 ? v * 1000 : v) : new Date(v);
  if (Number.isNaN(d.getTime())) return String(v);
  return d.toLocaleString();
}

/** A duration for a person: "1:05" (m:ss), "1:02:05" past an hour; "?" for what is not one.
 *  The CLI's progress lines spell it the same way (common/progress.h duration_text). */
export function fmtDuration(seconds: Num): string {
  if (!isNum(seconds) || seconds < 0) return "?";
  const s = Math.round(seconds);
  const two = (n: number) => String(n).padStart(2, "0");
  return s >= 3600 ? `${Math.floor(s / 3600)}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}` : `${Math.floor(s / 60)}:${two(s % 60)}`;
}

export function baseName(path: string | undefined | null): string {
  if (!path) return DASH;
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1] || path;
}

/** Token text with its whitespace made visible, for tooltips and lists. */
export function visibleToken(text: string): string {
  if (text === "") return "∅";
  return text.replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/\r/g, "␍");
}
