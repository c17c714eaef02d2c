// The Table tab: an instant query at "now" or a chosen time, every result type.
import { useMemo } from "preact/hooks";
import type { Params } from "../../api";
import { useQuery } from "./useQuery";
import { QueryMessages, QueryStats } from "./QueryStatus";
import { TimeInput } from "./TimeInput";
import { SeriesLabels } from "./SeriesLabels";
import { HistogramValue } from "./Histogram";
import { formatLocalTime } from "./duration";
import type { InstantSample, QueryData, RangeSeries } from "./types";

/** Rows put in the DOM at most; the rest are counted in a notice. */
const MAX_ROWS = 10_000;

interface Props {
  expr: string;
  moment: number | null;
  runId: number;
  onMomentChange: (ms: number | null) => void;
}

export function TableView({ expr, moment, runId, onMomentChange }: Props) {
  const params = useMemo<Params | null>(
    () => (expr.trim() ? { query: expr, time: (moment ?? Math.floor(Date.now() / 1000) * 1000) / 1000, stats: "all" } : null),
    [expr, moment, runId],
  );
  const [outcome, cancel] = useQuery("api/v1/query", params, runId);
  return (
    <div class="table-view">
      <div class="view-controls">
        <TimeInput label="Evaluation time" value={moment} onChange={onMomentChange} stepMs={60_000} />
        {outcome.status === "loading" && (
          <button type="button" onClick={cancel}>
            Cancel
          </button>
        )}
      </div>
      <QueryMessages outcome={outcome} />
      {outcome.status === "loading" && <p class="muted">Loading…</p>}
      {outcome.status === "cancelled" && <p class="muted">Query cancelled.</p>}
      {outcome.status === "idle" && <p class="muted">No query run yet.</p>}
      {outcome.data && outcome.status !== "error" && <Result data={outcome.data} />}
      <QueryStats outcome={outcome} />
    </div>
  );
}

function Result({ data }: { data: QueryData }) {
  switch (data.resultType) {
    case "vector":
      return <SeriesTable rows={data.result} value={InstantValue} />;
    case "matrix":
      return <SeriesTable rows={data.result} value={RangeValues} />;
    case "scalar":
    case "string":
      return (
        <table class="result-table">
          <tbody>
            <tr data-testid="result-row">
              <td data-testid="result-labels" class="muted">
                {data.resultType}
              </td>
              <td data-testid="result-value" class="mono value">
                {data.resultType === "string" ? JSON.stringify(data.result[1]) : data.result[1]}
              </td>
            </tr>
          </tbody>
        </table>
      );
  }
}

function Capped({ total }: { total: number }) {
  if (total <= MAX_ROWS) return null;
  return (
    <div class="info" role="status">
      Showing the first {MAX_ROWS.toLocaleString("en-US")} of {total.toLocaleString("en-US")} series. Narrow
      the query (for example with <code>topk</code> or more label matchers) to see the others.
    </div>
  );
}

/** One row per series (labels, then what `value` draws of it), capped at MAX_ROWS. */
function SeriesTable<S extends { metric: Record<string, string> }>({
  rows,
  value: Value,
}: {
  rows: S[];
  value: (props: { series: S }) => preact.JSX.Element;
}) {
  if (!rows.length) return <p class="muted">Empty query result.</p>;
  return (
    <>
      <Capped total={rows.length} />
      <div class="table-scroll">
        <table class="result-table">
          <tbody>
            {rows.slice(0, MAX_ROWS).map((s, i) => (
              <tr key={i} data-testid="result-row">
                <td data-testid="result-labels">
                  <SeriesLabels metric={s.metric} />
                </td>
                <td data-testid="result-value" class="mono value">
                  <Value series={s} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function InstantValue({ series }: { series: InstantSample }) {
  return series.histogram ? <HistogramValue h={series.histogram[1]} /> : <>{series.value?.[1]}</>;
}

/** A range query's samples, each with its Unix time (the local time on hover), as Prometheus' table shows them. */
function RangeValues({ series }: { series: RangeSeries }) {
  return (
    <>
      {(series.values ?? []).map(([t, v]) => (
        <div key={t}>
          {v} <SampleTime t={t} />
        </div>
      ))}
      {(series.histograms ?? []).map(([t, h]) => (
        <div key={`h${t}`} class="matrix-histogram">
          <SampleTime t={t} />
          <HistogramValue h={h} />
        </div>
      ))}
    </>
  );
}

function SampleTime({ t }: { t: number }) {
  return (
    <span class="muted" title={formatLocalTime(t * 1000)}>
      @{t}
    </span>
  );
}
