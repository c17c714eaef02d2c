import { render } from "preact";
import { useState } from "preact/hooks";
import type { ComponentType } from "preact";
import { href, onLinkClick, useLocation, type Location } from "./router";
import { applyTheme, initialTheme, type Theme } from "./theme";
import { QueryPage } from "./pages/query/QueryPage";
import { CardinalityPage } from "./pages/CardinalityPage";
import { AlertsPage } from "./pages/AlertsPage";
import { RulesPage } from "./pages/RulesPage";
import { TargetsPage } from "./pages/TargetsPage";
import { StatusPage } from "./pages/StatusPage";
import { StoragePage } from "./pages/StoragePage";
import { IngestionPage } from "./pages/IngestionPage";
import { FlagsPage } from "./pages/FlagsPage";
import { ConfigPage } from "./pages/ConfigPage";
import "./style.css";

export interface PageProps {
  location: Location;
}

interface Page {
  path: string;
  title: string;
  component: ComponentType<PageProps>;
  /** Other paths of the same page (Prometheus' names). */
  aliases?: string[];
  /** In the "Status" menu rather than the top bar. */
  status?: boolean;
}

const PAGES: Page[] = [
  { path: "/query", title: "Query", component: QueryPage, aliases: ["/", "/graph"] },
  { path: "/alerts", title: "Alerts", component: AlertsPage },
  { path: "/rules", title: "Rules", component: RulesPage },
  { path: "/targets", title: "Targets", component: TargetsPage },
  { path: "/cardinality", title: "Cardinality", component: CardinalityPage, aliases: ["/tsdb-status"] },
  { path: "/status", title: "Runtime & build", component: StatusPage, status: true },
  { path: "/storage", title: "Storage", component: StoragePage, status: true },
  { path: "/ingestion", title: "Ingestion", component: IngestionPage, status: true },
  { path: "/flags", title: "Flags", component: FlagsPage, status: true },
  { path: "/config", title: "Configuration", component: ConfigPage, status: true },
];

function pageOf(path: string): Page | undefined {
  const p = path.replace(/\/+$/, "") || "/";
  return PAGES.find((page) => page.path === p || page.aliases?.includes(p));
}

function NavLink({ page, active }: { page: Page; active: boolean }) {
  return (
    <a
      class={active ? "active" : undefined}
      href={href(page.path)}
      onClick={(e) => onLinkClick(e as MouseEvent, page.path)}
    >
      {page.title}
    </a>
  );
}

function App() {
  const location = useLocation();
  const [theme, setTheme] = useState<Theme>(() => {
    const t = initialTheme();
    applyTheme(t, false);
    return t;
  });
  const [menuOpen, setMenuOpen] = useState(false);
  const page = pageOf(location.path);
  document.title = page ? `${page.title} · Cairn` : "Cairn";
  const Component = page?.component;
  const toggleTheme = () => {
    const next = theme === "dark" ? "light" : "dark";
    applyTheme(next, true);
    setTheme(next);
  };
  return (
    <>
      <header class="topbar">
        <a class="brand" href={href("/query")} onClick={(e) => onLinkClick(e as MouseEvent, "/query")}>
          Cairn
        </a>
        <button class="menu-toggle" aria-label="Menu" onClick={() => setMenuOpen(!menuOpen)}>
          ☰
        </button>
        <nav class={menuOpen ? "open" : undefined} onClick={() => setMenuOpen(false)}>
          {PAGES.filter((p) => !p.status).map((p) => (
            <NavLink key={p.path} page={p} active={p === page} />
          ))}
          <details class="status-menu">
            <summary class={page?.status ? "active" : undefined}>Status</summary>
            <div class="dropdown">
              {PAGES.filter((p) => p.status).map((p) => (
                <NavLink key={p.path} page={p} active={p === page} />
              ))}
            </div>
          </details>
        </nav>
        <button class="theme-toggle" title="Switch theme" aria-label="Switch theme" onClick={toggleTheme}>
          {theme === "dark" ? "☀" : "☾"}
        </button>
      </header>
      <main>
        {Component ? (
          <Component location={location} />
        ) : (
          <p class="error">No page at {location.path}.</p>
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
