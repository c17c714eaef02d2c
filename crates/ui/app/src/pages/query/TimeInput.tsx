// A point in time in local time, or "now" when empty; arrows step it by `stepMs`.
import { toLocalInput } from "./duration";

interface Props {
  label: string;
  value: number | null;
  onChange: (ms: number | null) => void;
  /** How far the ‹ and › buttons move the time. */
  stepMs: number;
}

export function TimeInput({ label, value, onChange, stepMs }: Props) {
  const shift = (dir: number) => onChange((value ?? Date.now()) + dir * stepMs);
  return (
    <div class="control time-input">
      <button type="button" title={`Earlier`} aria-label={`${label}: earlier`} onClick={() => shift(-1)}>
        ‹
      </button>
      <input
        type="datetime-local"
        step={1}
        aria-label={label}
        title={label}
        value={value === null ? "" : toLocalInput(value)}
        onChange={(e) => {
          const text = (e.target as HTMLInputElement).value;
          // The input's text is local time; Date parses "YYYY-MM-DDTHH:mm[:ss]" as local.
          const ms = text ? new Date(text).getTime() : NaN;
          onChange(Number.isNaN(ms) ? null : ms);
        }}
      />
      <button type="button" title="Later" aria-label={`${label}: later`} onClick={() => shift(1)}>
        ›
      </button>
      <button
        type="button"
        class={value === null ? "now active" : "now"}
        title="Evaluate at the current time"
        aria-pressed={value === null}
        onClick={() => onChange(null)}
      >
        now
      </button>
    </div>
  );
}
