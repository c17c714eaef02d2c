// Presentational pieces for status pages: number tiles and name/value tables.
import type { ComponentChildren } from "preact";

export interface Tile {
  label: string;
  value: ComponentChildren;
  title?: string;
}

/** A row of headline numbers. */
export function Tiles({ tiles }: { tiles: Tile[] }) {
  return (
    <div class="tiles">
      {tiles.map((t) => (
        <div class="tile" key={t.label} title={t.title}>
          <div class="tile-value">{t.value}</div>
          <div class="tile-label">{t.label}</div>
        </div>
      ))}
    </div>
  );
}

/** A two-column table of names and values. */
export function KeyValueTable({ rows, caption }: { rows: [ComponentChildren, ComponentChildren][]; caption?: string }) {
  return (
    <div class="scroll-x">
      <table class="kv">
        {caption && <caption>{caption}</caption>}
        <tbody>
          {rows.map(([k, v], i) => (
            <tr key={i}>
              <th scope="row">{k}</th>
              <td>{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A horizontal bar showing `part` of `total`. */
export function ShareBar({ part, total }: { part: number; total: number }) {
  const p = total > 0 ? Math.min(100, (100 * part) / total) : 0;
  return (
    <span class="share-bar" aria-hidden="true">
      <span style={{ width: `${p}%` }} />
    </span>
  );
}
