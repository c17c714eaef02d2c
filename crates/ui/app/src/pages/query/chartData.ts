// Range query results as uPlot's aligned columns: one time axis (the query's
// step grid) and one value array per series, nulls where a series has no sample.
import type { RangeSeries } from "./types";
import { sampleValue } from "./format";

export interface ChartData {
  /** Unix seconds of each step. */
  xs: number[];
  /** The values as sampled (tooltip), per series. */
  raw: (number | null)[][];
  /** What is drawn: `raw`, or running sums when stacked. */
  drawn: (number | null)[][];
  /** Series that hold only native histograms (not graphed). */
  histogramOnly: number;
}

/**
 * One pass over the samples: a sample's column is its offset from `start` in
 * steps, as Prometheus evaluates a range query exactly on that grid.
 */
export function alignSeries(series: RangeSeries[], start: number, end: number, step: number, stacked: boolean): ChartData {
  const n = Math.max(0, Math.floor((end - start) / step + 1e-9) + 1);
  const xs: number[] = [];
  for (let k = 0; k < n; k++) xs.push(start + k * step);
  let histogramOnly = 0;
  const raw = series.map((s) => {
    const values = s.values;
    if (!values?.length && s.histograms?.length) histogramOnly++;
    return column(values ?? [], start, step, n);
  });
  return { xs, raw, drawn: stacked ? stack(raw, n) : raw, histogramOnly };
}

/**
 * A series' values in grid order, built by appending: a series without gaps
 * stays an array of unboxed doubles in V8 (no object per sample), which makes
 * 1,000 × 1,440 samples cheap to build and to draw.
 */
function column(values: [number, string][], start: number, step: number, n: number): (number | null)[] {
  const col: (number | null)[] = [];
  let j = 0;
  for (let k = 0; k < n; k++) {
    // Skip samples before this step (none in a well-formed answer).
    while (j < values.length && Math.round((values[j][0] - start) / step) < k) j++;
    if (j < values.length && Math.round((values[j][0] - start) / step) === k) {
      const v = sampleValue(values[j][1]);
      // uPlot cannot place NaN or infinities; they show as gaps.
      col.push(Number.isFinite(v) ? v : null);
      j++;
    } else {
      col.push(null);
    }
  }
  return col;
}

/** Running sums over the series; a series without a sample at a step adds nothing there. */
function stack(raw: (number | null)[][], n: number): (number | null)[][] {
  const sums = new Float64Array(n);
  return raw.map((col) => {
    const out: (number | null)[] = [];
    for (let k = 0; k < n; k++) {
      const v = col[k];
      if (v !== null) sums[k] += v;
      out.push(v === null ? null : sums[k]);
    }
    return out;
  });
}

/**
 * Series colours: distinct hues that read on light and dark backgrounds
 * (chart strokes, not UI colours, so not theme variables).
 */
const PALETTE = [
  "#3b82f6", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#06b6d4", "#ec4899", "#84cc16",
  "#f97316", "#6366f1", "#14b8a6", "#e11d48", "#a855f7", "#22c55e", "#0ea5e9", "#d97706",
  "#7c3aed", "#059669", "#db2777", "#65a30d",
];

export function seriesColor(i: number): string {
  return PALETTE[i % PALETTE.length];
}
