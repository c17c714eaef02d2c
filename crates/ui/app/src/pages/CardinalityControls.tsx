// The cardinality explorer's controls: the day, a series selector, a focus
// label and the list length. Typed text applies on Enter or "Apply".
import { useEffect, useState } from "preact/hooks";
import { utcDate } from "../format";
import { useApi } from "../components/useApi";
import { TOP_N_CHOICES, type CardinalityQuery } from "./cardinalityTypes";

/** The day, the selector, the focus label and the list length. */
export function CardinalityControls({ query, update }: { query: CardinalityQuery; update: (c: Partial<CardinalityQuery>) => void }) {
  // Typed text applies on Enter or "Apply", not on every keystroke.
  const [match, setMatch] = useState(query.match);
  const [focus, setFocus] = useState(query.focusLabel);
  useEffect(() => setMatch(query.match), [query.match]);
  useEffect(() => setFocus(query.focusLabel), [query.focusLabel]);
  // Label names to pick a focus label from.
  const labels = useApi<string[]>("api/v1/labels");
  const dirty = match.trim() !== query.match || focus.trim() !== query.focusLabel;
  return (
    <form
      class="toolbar cardinality-controls"
      onSubmit={(e) => {
        e.preventDefault();
        update({ match: match.trim(), focusLabel: focus.trim() });
      }}
    >
      <label>
        Day (UTC)
        <input
          type="date"
          value={query.date}
          max={utcDate()}
          onChange={(e) => update({ date: (e.target as HTMLInputElement).value })}
        />
      </label>
      <span class="chips">
        <button type="button" class={`chip${query.date === utcDate() ? " on" : ""}`} onClick={() => update({ date: utcDate() })}>
          Today
        </button>
        <button type="button" class={`chip${query.date === "" ? " on" : ""}`} onClick={() => update({ date: "" })}>
          All time
        </button>
      </span>
      <label class="grow">
        Series selector
        <input
          type="text"
          class="mono search"
          name="match"
          placeholder='e.g. {job="node"}'
          spellcheck={false}
          autocomplete="off"
          value={match}
          onInput={(e) => setMatch((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Focus label
        <input
          type="text"
          class="mono"
          name="focusLabel"
          placeholder="e.g. instance"
          spellcheck={false}
          autocomplete="off"
          size={14}
          list="cardinality-label-names"
          value={focus}
          onInput={(e) => setFocus((e.target as HTMLInputElement).value)}
        />
      </label>
      <datalist id="cardinality-label-names">
        {(labels.answer?.data ?? []).map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      <label>
        Top
        <select value={String(query.topN)} onChange={(e) => update({ topN: Number((e.target as HTMLSelectElement).value) })}>
          {[...new Set([...TOP_N_CHOICES, query.topN])]
            .sort((a, b) => a - b)
            .map((n) => (
              <option key={n} value={String(n)}>
                {n}
              </option>
            ))}
        </select>
      </label>
      <button type="submit" class={dirty ? "primary" : undefined}>
        Apply
      </button>
      {(query.match || query.focusLabel) && (
        <button type="button" onClick={() => update({ match: "", focusLabel: "" })}>
          Reset
        </button>
      )}
    </form>
  );
}
