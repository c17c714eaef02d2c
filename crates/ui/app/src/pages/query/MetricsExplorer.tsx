// A searchable list of the server's metric names with their type and help,
// to insert one into the expression (Prometheus' metrics explorer).
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, call } from "../../api";

interface Metadata {
  type: string;
  help: string;
}

interface Props {
  onPick: (name: string) => void;
  onClose: () => void;
}

/** Names put in the DOM at most while filtering. */
const MAX_SHOWN = 500;

/** Metadata is per family: `x_bucket`, `x_count` and `x_sum` are described under `x`. */
function metadataOf(meta: Record<string, Metadata[]>, name: string): Metadata | undefined {
  return (meta[name] ?? meta[name.replace(/_(bucket|count|sum)$/, "")])?.[0];
}

export function MetricsExplorer({ onPick, onClose }: Props) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [names, setNames] = useState<string[] | null>(null);
  const [meta, setMeta] = useState<Record<string, Metadata[]>>({});
  const [error, setError] = useState<string | null>(null);
  const [filter, setFilter] = useState("");

  useEffect(() => {
    dialog.current?.showModal();
    const abort = new AbortController();
    call<string[]>("api/v1/label/__name__/values", {}, { signal: abort.signal })
      .then((a) => setNames(a.data))
      .catch((e: unknown) => !abort.signal.aborted && setError(e instanceof ApiError ? e.message : String(e)));
    // Metadata is optional: without it the names alone are listed.
    call<Record<string, Metadata[]>>("api/v1/metadata", {}, { signal: abort.signal })
      .then((a) => setMeta(a.data))
      .catch(() => undefined);
    return () => abort.abort();
  }, []);

  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const matching = (names ?? []).filter((n) => {
    const help = metadataOf(meta, n)?.help.toLowerCase() ?? "";
    return words.every((w) => n.toLowerCase().includes(w) || help.includes(w));
  });

  return (
    <dialog ref={dialog} class="metrics-explorer" onClose={onClose} aria-label="Metrics explorer">
      <div class="explorer-head">
        <input
          type="search"
          placeholder="Filter by name or help text"
          aria-label="Filter metrics"
          value={filter}
          autoFocus
          onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
        />
        <button type="button" onClick={() => dialog.current?.close()}>
          Close
        </button>
      </div>
      {error && <div class="error">{error}</div>}
      {!names && !error && <p class="muted">Loading…</p>}
      {names && (
        <p class="muted">
          {matching.length.toLocaleString("en-US")} of {names.length.toLocaleString("en-US")} metrics
          {matching.length > MAX_SHOWN ? ` (first ${MAX_SHOWN} shown)` : ""}
        </p>
      )}
      <ul class="explorer-list">
        {matching.slice(0, MAX_SHOWN).map((n) => {
          const m = metadataOf(meta, n);
          return (
            <li key={n}>
              <button
                type="button"
                onClick={() => {
                  onPick(n);
                  dialog.current?.close();
                }}
              >
                <span class="mono">{n}</span>
                {m && <span class="metric-type">{m.type}</span>}
                {m?.help && <span class="muted metric-help">{m.help}</span>}
              </button>
            </li>
          );
        })}
      </ul>
    </dialog>
  );
}
