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
      return <VectorTable rows={data.result} />;
    case "matrix":
      return <MatrixTable rows={data.result} />;
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

function Empty() {
  return <p class="muted">Empty query result.</p>;
}

function VectorTable({ rows }: { rows: InstantSample[] }) {
  if (!rows.length) return <Empty />;
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
                  {s.histogram ? <HistogramValue h={s.histogram[1]} /> : s.value?.[1]}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function MatrixTable({ rows }: { rows: RangeSeries[] }) {
  if (!rows.length) return <Empty />;
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
                  {(s.values ?? []).map(([t, v]) => (
                    <div key={t}>
                      {v}{" "}
                      <span class="muted" title={formatLocalTime(t * 1000)}>
                        @{t}
                      </span>
                    </div>
                  ))}
                  {(s.histograms ?? []).map(([t, h]) => (
                    <div key={`h${t}`} class="matrix-histogram">
                      <span class="muted" title={formatLocalTime(t * 1000)}>
                        @{t}
                      </span>
                      <HistogramValue h={h} />
                    </div>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
