// The chart's legend: a swatch and the labels of each series. A click shows
// only that series (again: all); Ctrl/Cmd-click toggles one.
import { seriesColor } from "./chartData";
import { seriesName } from "./format";
import type { Labels } from "./types";

interface Props {
  metrics: Labels[];
  shown: boolean[] | null;
  /** Gets an update of the current flags (clicks may come faster than renders). */
  onChange: (update: (shown: boolean[] | null) => boolean[] | null) => void;
}

export function Legend({ metrics, shown, onChange }: Props) {
  const click = (i: number, e: MouseEvent) =>
    onChange((prev) => {
      const current = prev ?? metrics.map(() => true);
      if (e.ctrlKey || e.metaKey) {
        const next = current.slice();
        next[i] = !next[i];
        return next.every(Boolean) ? null : next;
      }
      const onlyThis = current[i] && current.filter(Boolean).length === 1;
      return onlyThis ? null : metrics.map((_, j) => j === i);
    });
  return (
    <ul class="legend" aria-label="Series (click: show only this one, Ctrl/Cmd-click: toggle)">
      {metrics.map((m, i) => (
        <li key={i} class={shown && !shown[i] ? "hidden" : undefined}>
          <button type="button" onClick={(e) => click(i, e as MouseEvent)}>
            <span class="swatch" style={{ background: seriesColor(i) }} />
            <span class="mono">{seriesName(m)}</span>
          </button>
        </li>
      ))}
    </ul>
  );
}
