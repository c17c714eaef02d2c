// The parts of the storage (Prometheus calls them blocks): their time
// range, size and where they are, newest first; long lists shown in pages.
import { useState } from "preact/hooks";
import { Badge } from "../components/badges";
import { formatBytes, formatCount, formatDateTime, formatDuration, formatIso, formatNumber } from "../format";

export interface Part {
  ulid: string;
  /** Milliseconds. */
  minTime: number;
  maxTime: number;
  stats?: { numSamples?: number; numSeries?: number; numChunks?: number };
  version?: number;
  bytes?: number;
  inMemory?: boolean;
}

const PAGE = 100;

/** "2026-11-28 05:00:00 – 06:59:59", the end's date written only when it differs. */
function timeRange(min: number, max: number): string {
  const from = formatDateTime(min);
  const to = formatDateTime(max);
  return `${from} – ${to.slice(0, 10) === from.slice(0, 10) ? to.slice(11) : to}`;
}

export function PartsTable({ parts }: { parts: Part[] }) {
  const [shown, setShown] = useState(PAGE);
  const sorted = [...parts].sort((a, b) => b.maxTime - a.maxTime || b.minTime - a.minTime);
  return (
    <>
      <div class="scroll-x">
        <table>
          <thead>
            <tr>
              <th>Time range</th>
              <th class="num">Span</th>
              <th class="num">Samples</th>
              <th class="num">Series</th>
              <th class="num">Chunks</th>
              <th class="num">Size</th>
              <th class="num">Bytes / sample</th>
              <th>Where</th>
              <th>ID</th>
            </tr>
          </thead>
          <tbody>
            {sorted.slice(0, shown).map((p) => {
              const samples = p.stats?.numSamples;
              return (
                <tr key={p.ulid} data-testid="part">
                  <td class="nowrap" title={`${formatIso(p.minTime)} – ${formatIso(p.maxTime)}`}>
                    {timeRange(p.minTime, p.maxTime)}
                  </td>
                  <td class="num">{formatDuration((p.maxTime - p.minTime) / 1000)}</td>
                  <td class="num">{samples !== undefined ? formatCount(samples) : "–"}</td>
                  <td class="num">{p.stats?.numSeries !== undefined ? formatCount(p.stats.numSeries) : "–"}</td>
                  <td class="num">{p.stats?.numChunks !== undefined ? formatCount(p.stats.numChunks) : "–"}</td>
                  <td class="num">{p.bytes !== undefined ? formatBytes(p.bytes) : "–"}</td>
                  <td class="num">{p.bytes !== undefined && samples ? formatNumber(p.bytes / samples) : "–"}</td>
                  <td>{p.inMemory ? <Badge tone="warn">in memory</Badge> : <Badge tone="ok">on disk</Badge>}</td>
                  <td class="mono muted small nowrap">{p.ulid}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {sorted.length > shown && (
        <div class="card-body">
          <button type="button" onClick={() => setShown(shown + PAGE)}>
            Show {Math.min(PAGE, sorted.length - shown)} more of {formatCount(sorted.length - shown)}
          </button>
        </div>
      )}
    </>
  );
}
