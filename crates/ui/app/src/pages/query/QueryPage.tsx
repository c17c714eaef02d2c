// The query page: panels of PromQL queries, their state kept in the URL
// (Prometheus' g<i>.* parameters) so links and alert generator URLs work.
import { useEffect, useRef, useState } from "preact/hooks";
import type { PageProps } from "../../main";
import { navigate } from "../../router";
import { QueryPanel } from "./QueryPanel";
import { decodePanels, encodePanels, newPanel, type PanelState } from "./panelState";
import "./query.css";

function panelsOf(search: URLSearchParams): PanelState[] {
  const panels = decodePanels(search);
  return panels.length ? panels : [newPanel()];
}

export function QueryPage({ location }: PageProps) {
  const [panels, setPanels] = useState(() => panelsOf(location.search));
  // The query string this page last wrote: anything else is a new link to load.
  const written = useRef<string | null>(null);

  useEffect(() => {
    const search = location.search.toString();
    if (written.current !== null && search === written.current) return;
    if (written.current !== null) setPanels(panelsOf(location.search));
    written.current = search;
  }, [location.search.toString()]);

  const update = (next: PanelState[]) => {
    setPanels(next);
    const search = encodePanels(next).toString();
    written.current = search;
    navigate(location.path, search, true);
  };
  const change = (id: number, c: Partial<PanelState>) =>
    update(panels.map((p) => (p.id === id ? { ...p, ...c } : p)));

  return (
    <div data-testid="page-query" class="query-page">
      {panels.map((p, i) => (
        <QueryPanel
          key={p.id}
          panel={p}
          onChange={(c) => change(p.id, c)}
          onRemove={() => {
            const rest = panels.filter((q) => q.id !== p.id);
            update(rest.length ? rest : [newPanel()]);
          }}
          onDuplicate={() => update([...panels.slice(0, i + 1), newPanel({ ...p }), ...panels.slice(i + 1)])}
        />
      ))}
      <button type="button" data-testid="add-panel" class="add-panel" onClick={() => update([...panels, newPanel()])}>
        + Add query
      </button>
    </div>
  );
}
