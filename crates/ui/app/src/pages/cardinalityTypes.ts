// The answer of `GET api/v1/status/tsdb`: Prometheus' fields, plus the ones
// VictoriaMetrics adds (totals, series per label name, per focus-label value),
// which a server may or may not send.

export interface Stat {
  name: string;
  value: number;
}

export interface TsdbStatus {
  headStats?: {
    numSeries: number;
    numLabelPairs: number;
    chunkCount: number;
    /** Milliseconds; MaxInt64/MinInt64 when there is no data. */
    minTime: number;
    maxTime: number;
  };
  totalSeries?: number;
  totalLabelValuePairs?: number;
  seriesCountByMetricName: Stat[];
  seriesCountByLabelName?: Stat[];
  seriesCountByFocusLabelValue?: Stat[];
  labelValueCountByLabelName: Stat[];
  seriesCountByLabelValuePair: Stat[];
  memoryInBytesByLabelName?: Stat[];
}

/** The explorer's state, as kept in the URL. */
export interface CardinalityQuery {
  /** YYYY-MM-DD (UTC) or "" for all time. */
  date: string;
  /** A series selector or "". */
  match: string;
  focusLabel: string;
  topN: number;
}

export const TOP_N_CHOICES = [5, 10, 20, 50, 100] as const;
export const DEFAULT_TOP_N = 10;
