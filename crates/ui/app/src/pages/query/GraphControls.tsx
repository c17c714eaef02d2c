// The Graph tab's settings: range, end time, step and display mode.
import { useEffect, useState } from "preact/hooks";
import { formatDuration, parseDuration, parseStep } from "./duration";
import { TimeInput } from "./TimeInput";
import type { DisplayMode, PanelState } from "./panelState";

const PRESETS = ["5m", "15m", "30m", "1h", "2h", "6h", "12h", "1d", "2d", "1w", "2w", "4w", "8w"].map(
  (p) => parseDuration(p)!,
);

interface Props {
  range: number;
  end: number | null;
  step: number | null;
  autoStep: number;
  displayMode: DisplayMode;
  onChange: (change: Partial<Pick<PanelState, "range" | "end" | "step" | "displayMode">>) => void;
}

export function GraphControls({ range, end, step, autoStep, displayMode, onChange }: Props) {
  const smaller = [...PRESETS].reverse().find((p) => p < range);
  const larger = PRESETS.find((p) => p > range);
  return (
    <div class="view-controls">
      <div class="control range-input">
        <button
          type="button"
          aria-label="Shorter range"
          title="Shorter range"
          disabled={smaller === undefined}
          onClick={() => smaller && onChange({ range: smaller })}
        >
          −
        </button>
        <DurationField
          label="Range"
          value={formatDuration(range)}
          list="cairn-range-presets"
          parse={parseDuration}
          onCommit={(ms) => ms !== null && onChange({ range: ms })}
        />
        <datalist id="cairn-range-presets">
          {PRESETS.map((p) => (
            <option key={p} value={formatDuration(p)} />
          ))}
        </datalist>
        <button
          type="button"
          aria-label="Longer range"
          title="Longer range"
          disabled={larger === undefined}
          onClick={() => larger && onChange({ range: larger })}
        >
          +
        </button>
      </div>
      <TimeInput label="End time" value={end} stepMs={range / 2} onChange={(ms) => onChange({ end: ms })} />
      <div class="control">
        <DurationField
          label="Resolution (step)"
          value={step === null ? "" : formatDuration(step)}
          placeholder={`auto: ${formatDuration(autoStep)}`}
          parse={parseStep}
          allowEmpty
          onCommit={(ms) => onChange({ step: ms })}
        />
      </div>
      <div class="control segmented" role="group" aria-label="Display mode">
        {(["lines", "stacked"] as const).map((m) => (
          <button
            key={m}
            type="button"
            class={m === displayMode ? "active" : undefined}
            aria-pressed={m === displayMode}
            onClick={() => onChange({ displayMode: m })}
          >
            {m === "lines" ? "Lines" : "Stacked"}
          </button>
        ))}
      </div>
    </div>
  );
}

interface FieldProps {
  label: string;
  value: string;
  placeholder?: string;
  list?: string;
  parse: (text: string) => number | null;
  /** Empty text commits null (e.g. "auto"). */
  allowEmpty?: boolean;
  onCommit: (ms: number | null) => void;
}

/** A typed duration, committed on Enter, blur or a datalist pick; invalid text is marked, not applied. */
function DurationField({ label, value, placeholder, list, parse, allowEmpty, onCommit }: FieldProps) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const empty = text.trim() === "";
  const parsed = empty ? null : parse(text);
  const invalid = !(empty && allowEmpty) && parsed === null;
  const commit = () => {
    if (invalid) return;
    if (text.trim() !== value) onCommit(parsed);
  };
  return (
    <input
      type="text"
      class={invalid ? "invalid" : undefined}
      aria-label={label}
      aria-invalid={invalid}
      title={invalid ? `${label}: not a duration (e.g. 90m, 1h30m, 2d)` : label}
      placeholder={placeholder}
      list={list}
      size={8}
      value={text}
      onInput={(e) => {
        const t = (e.target as HTMLInputElement).value;
        setText(t);
        // A datalist pick arrives as one input event with a whole preset: apply it.
        const kind = (e as InputEvent).inputType;
        if (list && (kind === undefined || kind === "insertReplacementText")) {
          const ms = parse(t);
          if (ms !== null) onCommit(ms);
        }
      }}
      onBlur={commit}
      onKeyDown={(e) => {
        if (e.key === "Enter") commit();
        if (e.key === "Escape") setText(value);
      }}
    />
  );
}
