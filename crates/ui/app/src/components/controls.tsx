// Inputs shared by the pages: a search box, toggle chips for states, a copy
// button, a page header with a refresh button.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

export function SearchInput({
  value,
  onInput,
  placeholder,
  label,
}: {
  value: string;
  onInput: (value: string) => void;
  placeholder: string;
  label: string;
}) {
  return (
    <input
      type="search"
      class="search"
      aria-label={label}
      placeholder={placeholder}
      value={value}
      onInput={(e) => onInput((e.target as HTMLInputElement).value)}
    />
  );
}

/**
 * Chips that filter by state: none selected shows everything (as in
 * Prometheus), each chip carries its count.
 */
export function StateFilter<S extends string>({
  states,
  selected,
  counts,
  onChange,
  label,
}: {
  states: readonly S[];
  selected: readonly string[];
  counts?: Partial<Record<S, number>>;
  onChange: (selected: S[]) => void;
  label: string;
}) {
  return (
    <span class="chips" role="group" aria-label={label}>
      {states.map((s) => {
        const on = selected.includes(s);
        return (
          <button
            key={s}
            type="button"
            class={`chip${on ? " on" : ""}`}
            aria-pressed={on}
            onClick={() => onChange(on ? (selected.filter((x) => x !== s) as S[]) : ([...selected, s] as S[]))}
          >
            {s}
            {counts && <span class="count">{counts[s] ?? 0}</span>}
          </button>
        );
      })}
    </span>
  );
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState<"copied" | "failed" | undefined>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone("copied");
    } catch {
      // Plain http on another host has no clipboard API: select-and-copy instead.
      setDone(legacyCopy(text) ? "copied" : "failed");
    }
    setTimeout(() => setDone(undefined), 1500);
  };
  return (
    <button type="button" onClick={copy} aria-live="polite">
      {done === "copied" ? "Copied" : done === "failed" ? "Copy failed" : label}
    </button>
  );
}

function legacyCopy(text: string): boolean {
  const area = document.createElement("textarea");
  area.value = text;
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  try {
    return document.execCommand("copy");
  } catch {
    return false;
  } finally {
    area.remove();
  }
}

const AUTO_REFRESH_SECONDS = [0, 5, 15, 30, 60] as const;

/**
 * A page's title line: the title, an optional note, a refresh button and,
 * for pages that watch something (targets, alerts), an automatic refresh.
 */
export function PageHeader({
  title,
  loading,
  onRefresh,
  autoRefresh,
  children,
}: {
  title: string;
  loading?: boolean;
  onRefresh?: () => void;
  autoRefresh?: boolean;
  children?: ComponentChildren;
}) {
  const [every, setEvery] = useState(0);
  // The latest callback, so the timer does not restart on every render.
  const refresh = useRef(onRefresh);
  refresh.current = onRefresh;
  useEffect(() => {
    if (!every) return;
    const timer = setInterval(() => refresh.current?.(), every * 1000);
    return () => clearInterval(timer);
  }, [every]);
  return (
    <div class="page-header">
      <h1>{title}</h1>
      {children}
      {onRefresh && (
        <span class="refresh">
          {autoRefresh && (
            <select
              aria-label="Refresh automatically"
              value={String(every)}
              onChange={(e) => setEvery(Number((e.target as HTMLSelectElement).value))}
            >
              {AUTO_REFRESH_SECONDS.map((s) => (
                <option key={s} value={String(s)}>
                  {s === 0 ? "Auto-refresh off" : `Every ${s}s`}
                </option>
              ))}
            </select>
          )}
          <button type="button" onClick={onRefresh} disabled={loading} aria-busy={loading} aria-label={`Refresh ${title}`}>
            ↻ Refresh
          </button>
        </span>
      )}
    </div>
  );
}

/** A message for an empty list, with what to do about it. */
export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}
