// The Graph tab: a range query over the chosen range, drawn with uPlot.
import { useMemo, useRef, useState } from "preact/hooks";
import type { Params } from "../../api";
import { useQuery } from "./useQuery";
import { QueryMessages, QueryStats } from "./QueryStatus";
import { GraphControls } from "./GraphControls";
import { Chart } from "./Chart";
import { formatMs } from "./format";
import type { PanelState } from "./panelState";

interface Props {
  panel: PanelState;
  /** The expression last run (the editor's text may differ). */
  expr: string;
  runId: number;
  onChange: (change: Partial<PanelState>) => void;
}

/** Steps the automatic resolution picks from: round numbers read better and align across queries. */
const NICE_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map(
  (s) => s * 1000,
);

/** About one point per two pixels of chart width (at least 100 points), rounded up to a round step. */
function autoStepFor(rangeMs: number, widthPx: number): number {
  const raw = rangeMs / Math.max(100, Math.floor(widthPx / 2));
  return NICE_STEPS.find((s) => s >= raw) ?? Math.ceil(raw / 86_400_000) * 86_400_000;
}

export function GraphView({ panel, expr, runId, onChange }: Props) {
  const { range, end, step, displayMode } = panel;
  const box = useRef<HTMLDivElement>(null);
  // The draw time, with the arrival time of the data it is for.
  const [drawn, setDrawn] = useState<{ at: number; ms: number } | null>(null);
  const width = () => box.current?.clientWidth || window.innerWidth - 40;
  const autoStep = autoStepFor(range, width());

  // "Now" is taken once per run, so re-renders do not re-query.
  const params = useMemo<Params | null>(() => {
    if (!expr.trim()) return null;
    // Whole seconds: the answer's timestamps then read as plain times.
    const endMs = end ?? Math.floor(Date.now() / 1000) * 1000;
    const stepMs = step ?? autoStepFor(range, width());
    return { query: expr, start: (endMs - range) / 1000, end: endMs / 1000, step: stepMs / 1000, stats: "all" };
  }, [expr, range, end, step, runId]);
  const [outcome, cancel] = useQuery("api/v1/query_range", params, runId);
  const used = outcome.params;

  return (
    <div class="graph-view" ref={box}>
      <GraphControls
        range={range}
        end={end}
        step={step}
        autoStep={autoStep}
        displayMode={displayMode}
        onChange={onChange}
      />
      {outcome.status === "loading" && (
        <p class="muted">
          Loading…{" "}
          <button type="button" onClick={cancel}>
            Cancel
          </button>
        </p>
      )}
      <QueryMessages outcome={outcome} />
      {outcome.status === "cancelled" && <p class="muted">Query cancelled.</p>}
      {outcome.status === "idle" && <p class="muted">No query run yet.</p>}
      {outcome.data?.resultType === "matrix" && outcome.status !== "error" && used && (
        outcome.data.result.length ? (
          <Chart
            key={outcome.receivedAt}
            series={outcome.data.result}
            start={Number(used.start)}
            end={Number(used.end)}
            step={Number(used.step)}
            stacked={displayMode === "stacked"}
            receivedAt={outcome.receivedAt ?? performance.now()}
            onDrawn={(ms) => setDrawn({ at: outcome.receivedAt ?? 0, ms })}
            onZoom={(from, to) =>
              // Whole seconds, so the URL carries a readable range ("5h40m", not "5h40m41s640ms").
              onChange({ range: Math.max(1, Math.round((to - from) / 1000)) * 1000, end: Math.round(to / 1000) * 1000 })
            }
          />
        ) : (
          <p class="muted">Empty query result.</p>
        )
      )}
      <QueryStats
        outcome={outcome}
        extra={[
          used ? `step ${Number(used.step)}s` : "",
          drawn && drawn.at === outcome.receivedAt ? `drawn in ${formatMs(drawn.ms)}` : "",
        ]
          .filter(Boolean)
          .join(" · ")}
      />
    </div>
  );
}
