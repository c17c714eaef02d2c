// Runtime & build information (`/status`): Prometheus' two status endpoints,
// each field under a readable name, unknown fields as the server names them.
import type { ComponentChildren } from "preact";
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { PageHeader } from "../components/controls";
import { KeyValueTable } from "../components/tables";
import { Badge } from "../components/badges";
import { PageLink } from "../components/links";
import { apiUrl } from "../api";
import { formatBytes, formatCount, formatDateTime, formatIso, formatRelative } from "../format";
import "../components/ui.css";

type Info = Record<string, string | number | boolean>;

/** Field → how to show it. Fields not listed show under their own name. */
interface Field {
  title: string;
  show?: (value: string | number | boolean) => ComponentChildren;
}

const moment = (v: string | number | boolean) => (
  <span title={formatIso(String(v))}>
    {formatDateTime(String(v))} <span class="muted">({formatRelative(String(v))})</span>
  </span>
);

const BUILD_FIELDS: Record<string, Field> = {
  cairnVersion: { title: "Cairn version" },
  version: { title: "Prometheus API version", show: (v) => <>{String(v)} <span class="muted">(the Prometheus release whose API Cairn answers as)</span></> },
  revision: { title: "Revision", show: (v) => <span class="mono">{String(v)}</span> },
  branch: { title: "Branch" },
  buildUser: { title: "Build user" },
  buildDate: { title: "Build date" },
  goVersion: { title: "Compiler" },
};

const RUNTIME_FIELDS: Record<string, Field> = {
  startTime: { title: "Start time", show: moment },
  serverTime: { title: "Server time", show: moment },
  CWD: { title: "Working directory", show: (v) => <span class="mono">{String(v)}</span> },
  hostname: { title: "Host name" },
  reloadConfigSuccess: {
    title: "Configuration reload",
    show: (v) => (v ? <Badge tone="ok">successful</Badge> : <Badge tone="bad">failed</Badge>),
  },
  lastConfigTime: { title: "Last successful configuration reload", show: moment },
  corruptionCount: { title: "WAL corruptions", show: (v) => formatCount(Number(v)) },
  goroutineCount: { title: "OS threads", show: (v) => formatCount(Number(v)) },
  GOMAXPROCS: { title: "CPUs available", show: (v) => formatCount(Number(v)) },
  GOMEMLIMIT: {
    title: "Memory limit",
    // MaxInt64 means no limit.
    show: (v) => (Number(v) >= 2 ** 62 ? "none" : formatBytes(Number(v))),
  },
  storageRetention: { title: "Storage retention" },
};

// Go runtime settings a Rust server reports empty; not worth a row.
const HIDDEN_WHEN_EMPTY = new Set(["GOGC", "GODEBUG"]);

function rows(info: Info, fields: Record<string, Field>): [ComponentChildren, ComponentChildren][] {
  const known = Object.keys(fields).filter((k) => k in info);
  const rest = Object.keys(info).filter((k) => !(k in fields) && !(HIDDEN_WHEN_EMPTY.has(k) && info[k] === ""));
  return [...known, ...rest].map((k) => {
    const field = fields[k];
    const value = info[k];
    return [
      <span title={k}>{field?.title ?? k}</span>,
      field?.show ? field.show(value) : String(value),
    ];
  });
}

export function StatusPage(_props: PageProps) {
  const build = useApi<Info>("api/v1/status/buildinfo");
  const runtime = useApi<Info>("api/v1/status/runtimeinfo");
  const reload = () => {
    build.reload();
    runtime.reload();
  };
  return (
    <div data-testid="page-status">
      <PageHeader title="Runtime & build information" loading={build.loading || runtime.loading} onRefresh={reload} />
      <div class="status-grid">
        <section class="card">
          <div class="card-header">
            <h2>Runtime</h2>
          </div>
          <div class="card-body">
            <Fetching fetched={runtime} what="the runtime information">
              {(info) => <KeyValueTable rows={rows(info, RUNTIME_FIELDS)} />}
            </Fetching>
          </div>
        </section>
        <section class="card">
          <div class="card-header">
            <h2>Build</h2>
          </div>
          <div class="card-body">
            <Fetching fetched={build} what="the build information">
              {(info) => <KeyValueTable rows={rows(info, BUILD_FIELDS)} />}
            </Fetching>
          </div>
        </section>
      </div>
      <p class="muted">
        More: <PageLink path="/storage">storage</PageLink> · <PageLink path="/ingestion">ingestion</PageLink> ·{" "}
        <PageLink path="/flags">command-line flags</PageLink> · <PageLink path="/config">configuration</PageLink> ·{" "}
        <a href={apiUrl("metrics")}>Cairn's own metrics</a>
      </p>
    </div>
  );
}
