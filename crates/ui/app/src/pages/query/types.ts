// The shapes of Prometheus' query API answers (api/v1/query, api/v1/query_range).

export type Labels = Record<string, string>;
/** [unix seconds, value as text] */
export type SamplePair = [number, string];

/** A native histogram as the API encodes it. */
export interface NativeHistogram {
  count: string;
  sum: string;
  /** [boundary rule, lower, upper, count]; rule 0: (l,u], 1: [l,u), 2: (l,u), 3: [l,u]. */
  buckets?: [number, string, string, string][];
}
export type HistogramPair = [number, NativeHistogram];

export interface InstantSample {
  metric: Labels;
  value?: SamplePair;
  histogram?: HistogramPair;
}

export interface RangeSeries {
  metric: Labels;
  values?: SamplePair[];
  histograms?: HistogramPair[];
}

export interface QueryStats {
  timings?: { evalTotalTime?: number; execTotalTime?: number; [k: string]: number | undefined };
  samples?: { totalQueryableSamples?: number; peakSamples?: number };
}

export type QueryData =
  | { resultType: "vector"; result: InstantSample[]; stats?: QueryStats }
  | { resultType: "matrix"; result: RangeSeries[]; stats?: QueryStats }
  | { resultType: "scalar"; result: SamplePair; stats?: QueryStats }
  | { resultType: "string"; result: SamplePair; stats?: QueryStats };

/** How many series a result holds (a scalar or string counts as one). */
export function resultSeriesCount(data: QueryData): number {
  return data.resultType === "vector" || data.resultType === "matrix" ? data.result.length : 1;
}
