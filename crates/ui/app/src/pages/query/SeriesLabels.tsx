// `name{a="b", ...}` with the name and label names set off.
import type { Labels } from "./types";
import { quoteLabelValue } from "./format";

export function SeriesLabels({ metric }: { metric: Labels }) {
  const name = metric.__name__;
  const keys = Object.keys(metric).filter((k) => k !== "__name__");
  return (
    <span class="series-name mono">
      {name && <span class="metric-name">{name}</span>}
      {(keys.length > 0 || !name) && (
        <>
          {"{"}
          {keys.map((k, i) => (
            <span key={k}>
              <span class="label-name">{k}</span>=<span class="label-value">{quoteLabelValue(metric[k])}</span>
              {i < keys.length - 1 ? ", " : ""}
            </span>
          ))}
          {"}"}
        </>
      )}
    </span>
  );
}
