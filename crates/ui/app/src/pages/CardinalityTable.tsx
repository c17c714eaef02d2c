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
  row,
  total,
  testIds,
}: {
  title: string;
  description?: ComponentChildren;
  nameHeader: string;
  valueHeader: string;
  stats: Stat[];
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
