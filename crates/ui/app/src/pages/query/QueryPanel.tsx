// One query panel: the expression editor, then the Table or Graph tab.
import { useRef, useState } from "preact/hooks";
import type { EditorView } from "@codemirror/view";
import { ApiError, call } from "../../api";
import { PromQLEditor } from "./PromQLEditor";
import { MetricsExplorer } from "./MetricsExplorer";
import { TableView } from "./TableView";
import { GraphView } from "./GraphView";
import { rememberQuery } from "./history";
import type { PanelState, Tab } from "./panelState";

interface Props {
  panel: PanelState;
  onChange: (change: Partial<PanelState>) => void;
  onRemove: () => void;
  onDuplicate: () => void;
}

const TABS: { tab: Tab; title: string }[] = [
  { tab: "table", title: "Table" },
  { tab: "graph", title: "Graph" },
];

export function QueryPanel({ panel, onChange, onRemove, onDuplicate }: Props) {
  const text = useRef(panel.expr);
  // A panel opened from a URL with an expression runs it at once, as Prometheus does.
  const [run, setRun] = useState({ expr: panel.expr, id: panel.expr ? 1 : 0 });

  const view = useRef<EditorView | null>(null);
  const [explorer, setExplorer] = useState(false);
  const [formatError, setFormatError] = useState<string | null>(null);

  /** Replaces the selection (or inserts at the cursor) and focuses the editor. */
  const insert = (text: string, all = false) => {
    const v = view.current;
    if (!v) return;
    const range = all ? { from: 0, to: v.state.doc.length } : v.state.selection.main;
    v.dispatch({
      changes: { from: range.from, to: range.to, insert: text },
      selection: { anchor: range.from + text.length },
    });
    v.focus();
  };

  /** Prometheus' own formatting of the expression (api/v1/format_query). */
  const format = () => {
    const expr = text.current;
    if (!expr.trim()) return;
    setFormatError(null);
    call<string>("api/v1/format_query", { query: expr }, { post: true })
      .then((a) => insert(a.data, true))
      .catch((e: unknown) => setFormatError(e instanceof ApiError ? e.message : String(e)));
  };

  const execute = () => {
    const expr = text.current;
    rememberQuery(expr);
    setFormatError(null);
    setRun((r) => ({ expr, id: r.id + 1 }));
    if (expr !== panel.expr) onChange({ expr });
  };

  return (
    <section class="query-panel" data-testid="query-panel" aria-label="Query panel">
      <div class="editor-row">
        <PromQLEditor initial={panel.expr} viewRef={view} onChange={(t) => (text.current = t)} onRun={execute} />
        <div class="editor-actions">
          <button type="button" class="icon" title="Explore metrics" aria-label="Explore metrics" onClick={() => setExplorer(true)}>
            <svg viewBox="0 0 16 16" aria-hidden="true">
              <circle cx="7" cy="7" r="4.5" />
              <path d="M10.5 10.5L14 14" />
            </svg>
          </button>
          <button type="button" class="icon" title="Format expression" aria-label="Format expression" onClick={format}>
            <svg viewBox="0 0 16 16" aria-hidden="true">
              <path d="M2 3.5h12M4.5 6.5h9.5M4.5 9.5h9.5M2 12.5h12" />
            </svg>
          </button>
          <button type="button" class="primary" data-testid="execute" onClick={execute}>
            Execute
          </button>
          <button type="button" class="icon" title="Duplicate this panel" aria-label="Duplicate panel" onClick={onDuplicate}>
            <svg viewBox="0 0 16 16" aria-hidden="true">
              <rect x="5" y="5" width="9" height="9" rx="1.5" />
              <path d="M11 5V3.5A1.5 1.5 0 0 0 9.5 2h-6A1.5 1.5 0 0 0 2 3.5v6A1.5 1.5 0 0 0 3.5 11H5" />
            </svg>
          </button>
          <button type="button" class="icon" title="Remove this panel" aria-label="Remove panel" onClick={onRemove}>
            <svg viewBox="0 0 16 16" aria-hidden="true">
              <path d="M3.5 3.5l9 9M12.5 3.5l-9 9" />
            </svg>
          </button>
        </div>
      </div>
      {formatError && <div class="error">{formatError}</div>}
      {explorer && <MetricsExplorer onPick={(name) => insert(name)} onClose={() => setExplorer(false)} />}
      <div class="tabs" role="tablist">
        {TABS.map(({ tab, title }) => (
          <button
            key={tab}
            type="button"
            role="tab"
            data-testid={`tab-${tab}`}
            aria-selected={panel.tab === tab}
            class={panel.tab === tab ? "active" : undefined}
            onClick={() => onChange({ tab })}
          >
            {title}
          </button>
        ))}
      </div>
      <div class="tab-body" role="tabpanel">
        {panel.tab === "table" ? (
          <TableView
            expr={run.expr}
            moment={panel.moment}
            runId={run.id}
            onMomentChange={(moment) => onChange({ moment })}
          />
        ) : (
          <GraphView panel={panel} expr={run.expr} runId={run.id} onChange={onChange} />
        )}
      </div>
    </section>
  );
}
