// One top list of the cardinality explorer: a name that opens the query page,
// a button that narrows the explorer to it, a count and its share of all series.
import type { ComponentChildren } from "preact";
import { QueryLink } from "../components/links";
import { ShareBar } from "../components/tables";
import { Empty } from "../components/controls";
import { formatCount, formatPercent } from "../format";
import type { Stat } from "./cardinalityTypes";

export interface StatRow {
  /** What the row shows and is keyed by. */
  name: string;
  /** The expression the name opens on the query page. */
  expr: string;
  /** Narrows the explorer to this row; its button's accessible name. */
  focus?: { label: string; apply: () => void };
}

export function CardinalityTable({
  title,
  description,
  nameHeader,
  valueHeader,
  stats,
  previous,
  limit = Infinity,
  row,
  total,
  testIds,
}: {
  title: string;
  description?: ComponentChildren;
  nameHeader: string;
  valueHeader: string;
  stats: Stat[];
  /** The same list for the day before, for a change column. */
  previous?: Stat[];
  /** The length the lists were cut to: a shorter list is complete. */
  limit?: number;
  row: (stat: Stat) => StatRow;
  /** The count shares are of; no share column without one. */
  total?: number;
  /** Test hooks of the rows and their cells (the top-metrics table). */
  testIds?: { row: string; name: string; value: string };
}) {
  return (
    <section class="card">
      <div class="card-header">
        <h2>{title}</h2>
        {description && <span class="muted">{description}</span>}
      </div>
      {stats.length === 0 ? (
        <div class="card-body">
          <Empty>Nothing in this range.</Empty>
        </div>
      ) : (
        <div class="scroll-x">
          <table>
            <thead>
              <tr>
                <th>{nameHeader}</th>
                <th class="num">{valueHeader}</th>
                {previous && <th class="num">vs day before</th>}
                {total !== undefined && <th>Share of all series</th>}
              </tr>
            </thead>
            <tbody>
              {stats.map((stat) => {
                const r = row(stat);
                return (
                  <tr key={r.name} data-testid={testIds?.row}>
                    <td>
                      <span class="stat-name">
                        <span data-testid={testIds?.name}>
                          <QueryLink expr={r.expr} class="mono">
                            {r.name}
                          </QueryLink>
                        </span>
                        {r.focus && (
                          <button
                            type="button"
                            class="icon-button"
                            title={r.focus.label}
                            aria-label={r.focus.label}
                            onClick={r.focus.apply}
                          >
                            focus
                          </button>
                        )}
                      </span>
                    </td>
                    <td class="num" data-testid={testIds?.value} data-value={stat.value}>
                      {formatCount(stat.value)}
                    </td>
                    {previous && (
                      <td class="num">
                        <Change
                          now={stat.value}
                          // Missing from a complete list: none that day.
                          before={previous.find((p) => p.name === stat.name)?.value ?? (previous.length < limit ? 0 : undefined)}
                        />
                      </td>
                    )}
                    {total !== undefined && (
                      <td>
                        <span class="share">
                          <ShareBar part={stat.value} total={total} />
                          {formatPercent(stat.value, total)}
                        </span>
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** The change from the day before; a name outside that day's top list has no figure. */
function Change({ now, before }: { now: number; before?: number }) {
  if (before === undefined) return <span class="muted" title="Not in the day before's top list">–</span>;
  const d = now - before;
  if (d === 0) return <span class="muted">0</span>;
  return (
    <span class={d > 0 ? "change-up" : "change-down"} title={`${formatCount(before)} the day before`}>
      {d > 0 ? "+" : "−"}
      {formatCount(Math.abs(d))}
    </span>
  );
}
