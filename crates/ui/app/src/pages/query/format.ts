// Series names and numbers as Prometheus prints them.
import type { Labels } from "./types";

/** A label value quoted as in PromQL: `"a\"b"`. */
export function quoteLabelValue(v: string): string {
  return `"${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

/** `name{a="b", c="d"}`; `{}` for a series without labels. */
export function seriesName(metric: Labels): string {
  const name = metric.__name__ ?? "";
  const labels = Object.keys(metric)
    .filter((k) => k !== "__name__")
    .map((k) => `${k}=${quoteLabelValue(metric[k])}`);
  return labels.length || !name ? `${name}{${labels.join(", ")}}` : name;
}

/** The sample value as text, as the API gives it ("NaN", "+Inf" kept). */
export function sampleValue(text: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  return Number(text);
}

const SI: [number, string][] = [
  [1e24, "Y"],
  [1e21, "Z"],
  [1e18, "E"],
  [1e15, "P"],
  [1e12, "T"],
  [1e9, "G"],
  [1e6, "M"],
  [1e3, "k"],
  [1, ""],
  [1e-3, "m"],
  [1e-6, "µ"],
  [1e-9, "n"],
  [1e-12, "p"],
];

/** A compact axis label: 1.5k, 20M, 3m (milli), 0 — at most 4 significant digits. */
export function formatSI(v: number): string {
  if (v === 0 || !Number.isFinite(v)) return String(v);
  const abs = Math.abs(v);
  for (const [scale, suffix] of SI) {
    if (abs >= scale) return `${trim(v / scale)}${suffix}`;
  }
  return v.toExponential(2);
}

function trim(v: number): string {
  return String(Number(v.toPrecision(4)));
}

/** A number with thousands separators for counts. */
export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** A short time span: 850ms, 1.2s. */
export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)}ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)}s`;
}
