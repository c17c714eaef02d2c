// A native histogram in a table cell: count and sum, and its buckets on demand.
import type { NativeHistogram } from "./types";

// Brackets of a bucket by boundary rule: 0 (l,u], 1 [l,u), 2 (l,u), 3 [l,u].
const OPEN = ["(", "[", "(", "["];
const CLOSE = ["]", ")", ")", "]"];

export function HistogramValue({ h }: { h: NativeHistogram }) {
  const buckets = h.buckets ?? [];
  return (
    <div class="histogram">
      <div>
        count: <span class="mono">{h.count}</span> · sum: <span class="mono">{h.sum}</span>
      </div>
      {buckets.length > 0 && (
        <details>
          <summary>{buckets.length} buckets</summary>
          <table class="buckets">
            <thead>
              <tr>
                <th>Range</th>
                <th>Count</th>
              </tr>
            </thead>
            <tbody>
              {buckets.map(([rule, lower, upper, count], i) => (
                <tr key={i}>
                  <td class="mono">{`${OPEN[rule] ?? "("}${lower}, ${upper}${CLOSE[rule] ?? "]"}`}</td>
                  <td class="mono">{count}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </div>
  );
}
