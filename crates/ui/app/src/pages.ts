// The UI's pages: their paths, titles and places in the menu. Plain data, as
// the build also writes the paths to `routes.json`, from which the server
// knows which paths to answer with the app (vite.config.ts).

export interface PageInfo {
  id: PageId;
  path: string;
  title: string;
  /** Other paths of the same page (Prometheus' names). */
  aliases?: string[];
  /** In the "Status" menu rather than the top bar. */
  status?: boolean;
}

export type PageId =
  | "query"
  | "alerts"
  | "rules"
  | "targets"
  | "cardinality"
  | "status"
  | "storage"
  | "ingestion"
  | "flags"
  | "config";

export const PAGES: PageInfo[] = [
  { id: "query", path: "/query", title: "Query", aliases: ["/", "/graph"] },
  { id: "alerts", path: "/alerts", title: "Alerts" },
  { id: "rules", path: "/rules", title: "Rules" },
  { id: "targets", path: "/targets", title: "Targets" },
  { id: "cardinality", path: "/cardinality", title: "Cardinality", aliases: ["/tsdb-status"] },
  { id: "status", path: "/status", title: "Runtime & build", status: true },
  { id: "storage", path: "/storage", title: "Storage", status: true },
  { id: "ingestion", path: "/ingestion", title: "Ingestion", status: true },
  { id: "flags", path: "/flags", title: "Flags", status: true },
  { id: "config", path: "/config", title: "Configuration", status: true },
];

/** Every path the app answers, for the server. */
export function pagePaths(): string[] {
  return PAGES.flatMap((p) => [p.path, ...(p.aliases ?? [])]);
}
