// One colour scale for every experiment: KL decades from 1e-6 to 1, so a token's colour means
// the same number in every report (Q8_0 stays pale where Q2_K is red). Tokens at or below the
// run's floor get no shade: their difference is numerical noise. "Relative" stretches the
// same ramp from the floor to this run's maximum, for reading one run's structure.
import { isNum } from "./format";
import type { Num, Result, Summary } from "./types";

export const FIXED_LO = 1e-6;
export const FIXED_HI = 1;
const LEVELS = 64;

export interface KlScale {
  lo: number;
  hi: number;
  /** KL at or below this is not shaded (the floor, or lo). */
  unshadedBelow: number;
  relative: boolean;
  level(kl: Num): number; // -1: no shade
  ramp: string[];
}

/** Pale yellow to red on a log scale; text on every step keeps ≥ 4.5:1 against #111. */
function makeRamp(): string[] {
  const ramp: string[] = [];
  for (let i = 0; i < LEVELS; i++) {
    const t = i / (LEVELS - 1);
    ramp.push(`hsl(${(54 - 54 * t).toFixed(1)} 95% ${(90 - 28 * t).toFixed(1)}%)`);
  }
  return ramp;
}
const RAMP = makeRamp();

/** The larger of the two arms' floors (mean KL), as the cards show it; 0 when there is none. */
export function floorKl(s: Summary): number {
  return isNum(s.floor_kl_mean) ? s.floor_kl_mean : 0;
}

export function maxKl(result: Result): number {
  let max = 0;
  for (const c of result.chunks) for (const p of c.positions) if (p.scored && isNum(p.kl) && p.kl > max) max = p.kl;
  return max;
}

export function klScale(result: Result, relative: boolean): KlScale {
  return scaleFrom(floorKl(result.summary), relative ? maxKl(result) : FIXED_HI, relative);
}

/** The fixed scale with nothing below it unshaded but 0: for pages that are not one diff. */
export function fixedScale(): KlScale {
  return scaleFrom(0, FIXED_HI, false);
}

function scaleFrom(floor: number, max: number, relative: boolean): KlScale {
  const lo = relative ? Math.max(floor, FIXED_LO) : FIXED_LO;
  const hi = relative ? Math.max(max, lo * 10) : FIXED_HI;
  const span = Math.log(hi) - Math.log(lo);
  const unshadedBelow = Math.max(floor, FIXED_LO);
  return {
    lo,
    hi,
    unshadedBelow,
    relative,
    ramp: RAMP,
    level(kl: Num): number {
      if (!isNum(kl) || kl <= unshadedBelow) return -1;
      const t = (Math.log(kl) - Math.log(lo)) / span;
      return Math.max(0, Math.min(LEVELS - 1, Math.round(t * (LEVELS - 1))));
    },
  };
}

export function colourOf(scale: KlScale, kl: Num): string | null {
  const l = scale.level(kl);
  return l < 0 ? null : scale.ramp[l];
}

/** The ramp as a CSS gradient with its decade ticks (labels at each power of ten). */
export function rampStops(scale: KlScale): { gradient: string; ticks: { at: number; label: string }[] } {
  const stops = scale.ramp.filter((_, i) => i % 8 === 0 || i === LEVELS - 1).join(", ");
  const ticks: { at: number; label: string }[] = [];
  const span = Math.log10(scale.hi) - Math.log10(scale.lo);
  for (let e = Math.ceil(Math.log10(scale.lo)); e <= Math.floor(Math.log10(scale.hi)); e++) {
    ticks.push({ at: (e - Math.log10(scale.lo)) / span, label: e === 0 ? "1" : `1e${e}` });
  }
  return { gradient: `linear-gradient(to right, ${stops})`, ticks };
}
