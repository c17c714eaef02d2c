// What the API said about a query: its error, warnings and infos verbatim,
// and the cost line.
import type { QueryOutcome } from "./useQuery";
import { resultSeriesCount } from "./types";
import { formatCount, formatMs } from "./format";

export function QueryMessages({ outcome }: { outcome: QueryOutcome }) {
  return (
    <>
      {outcome.status === "error" && (
        <div class="error" data-testid="query-error" role="alert">
          {outcome.error}
        </div>
      )}
      {outcome.warnings.map((w, i) => (
        <div key={`w${i}`} class="warning" data-testid="query-warning">
          {w}
        </div>
      ))}
      {outcome.infos.map((m, i) => (
        <div key={`i${i}`} class="info" data-testid="query-info">
          {m}
        </div>
      ))}
    </>
  );
}

/** "1,000 series · 1,441,000 samples read · eval 120ms · round trip 450ms". */
export function QueryStats({ outcome, extra }: { outcome: QueryOutcome; extra?: string }) {
  const { data } = outcome;
  if (outcome.status !== "done" || !data) return null;
  const parts = [`${formatCount(resultSeriesCount(data))} series`];
  const samples = data.stats?.samples?.totalQueryableSamples;
  if (samples !== undefined) parts.push(`${formatCount(samples)} samples read`);
  const evalSeconds = data.stats?.timings?.evalTotalTime;
  if (evalSeconds !== undefined) parts.push(`eval ${formatMs(evalSeconds * 1000)}`);
  if (outcome.roundTripMs !== undefined) parts.push(`round trip ${formatMs(outcome.roundTripMs)}`);
  if (extra) parts.push(extra);
  return (
    <div class="query-stats muted" data-testid="query-stats">
      {parts.join(" · ")}
    </div>
  );
}
