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
  const xs = new Array<number>(n);
  for (let k = 0; k < n; k++) xs[k] = start + k * step;
  let histogramOnly = 0;
  const raw = series.map((s) => {
    const col = new Array<number | null>(n).fill(null);
    const values = s.values;
    if (!values?.length) {
      if (s.histograms?.length) histogramOnly++;
      return col;
    }
    for (let j = 0; j < values.length; j++) {
      const [t, text] = values[j];
      const k = Math.round((t - start) / step);
      if (k < 0 || k >= n) continue;
      const v = sampleValue(text);
      // uPlot cannot place NaN or infinities; they show as gaps.
      col[k] = Number.isFinite(v) ? v : null;
    }
    return col;
  });
  return { xs, raw, drawn: stacked ? stack(raw, n) : raw, histogramOnly };
}

/** Running sums over the series; a series without a sample at a step adds nothing there. */
function stack(raw: (number | null)[][], n: number): (number | null)[][] {
  const sums = new Float64Array(n);
  return raw.map((col) => {
    const out = new Array<number | null>(n);
    for (let k = 0; k < n; k++) {
      const v = col[k];
      if (v !== null) sums[k] += v;
      out[k] = v === null ? null : sums[k];
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
