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
import { PAGES, type PageId, type PageInfo } from "./pages";
import "./style.css";

export interface PageProps {
  location: Location;
}

const COMPONENTS: Record<PageId, ComponentType<PageProps>> = {
  query: QueryPage,
  alerts: AlertsPage,
  rules: RulesPage,
  targets: TargetsPage,
  cardinality: CardinalityPage,
  status: StatusPage,
  storage: StoragePage,
  ingestion: IngestionPage,
  flags: FlagsPage,
  config: ConfigPage,
};

type Page = PageInfo;

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
  const Component = page && COMPONENTS[page.id];
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
