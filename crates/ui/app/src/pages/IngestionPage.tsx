// Ingestion (`/ingestion`): per write protocol, what was accepted and what
// was turned away and why (`api/v1/status/ingestion`, counters since start).
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { Empty, PageHeader } from "../components/controls";
import { Tiles } from "../components/tables";
import { Badge } from "../components/badges";
import { formatCount, formatDuration, formatPercent } from "../format";
import "../components/ui.css";

interface ProtocolStats {
  protocol: string;
  samples: number;
  series: number;
  samplesRejected: Record<string, number>;
  requestsRejected: Record<string, number>;
}

interface IngestionStatus {
  protocols: ProtocolStats[];
  cpuSeconds: number;
}

/** The wire protocols' names as their users know them; others show as the server names them. */
const PROTOCOL_NAMES: Record<string, string> = {
  remote_write: "Prometheus remote write",
  remote_write_2: "Prometheus remote write 2.0",
  influx: "InfluxDB line protocol",
  opentsdb: "OpenTSDB",
  graphite: "Graphite",
  prometheus_text: "Import, Prometheus text",
  json_lines: "Import, JSON lines",
  csv: "Import, CSV",
  otlp: "OpenTelemetry (OTLP)",
};

const sum = (counts: Record<string, number>) => Object.values(counts ?? {}).reduce((a, b) => a + b, 0);

function ProtocolName({ id }: { id: string }) {
  return (
    <>
      {PROTOCOL_NAMES[id] ?? id} {PROTOCOL_NAMES[id] && <span class="muted mono small">{id}</span>}
    </>
  );
}

export function IngestionPage(_props: PageProps) {
  const fetched = useApi<IngestionStatus>("api/v1/status/ingestion");
  return (
    <div data-testid="page-ingestion">
      <PageHeader title="Ingestion" loading={fetched.loading} onRefresh={fetched.reload} />
      <Fetching fetched={fetched} what="the ingestion statistics">
        {(status) => <Ingestion status={status} />}
      </Fetching>
    </div>
  );
}

function Ingestion({ status }: { status: IngestionStatus }) {
  const protocols = [...status.protocols].sort((a, b) => b.samples - a.samples);
  const accepted = protocols.reduce((a, p) => a + p.samples, 0);
  const rejectedSamples = protocols.reduce((a, p) => a + sum(p.samplesRejected), 0);
  const rejectedRequests = protocols.reduce((a, p) => a + sum(p.requestsRejected), 0);
  const reasons = protocols.flatMap((p) => [
    ...Object.entries(p.samplesRejected ?? {}).map(([reason, n]) => ({ protocol: p.protocol, what: "samples", reason, n })),
    ...Object.entries(p.requestsRejected ?? {}).map(([reason, n]) => ({ protocol: p.protocol, what: "requests", reason, n })),
  ]).filter((r) => r.n > 0).sort((a, b) => b.n - a.n);
  return (
    <>
      <p class="muted">Counted since this server started.</p>
      <Tiles
        tiles={[
          { label: "Samples accepted", value: formatCount(accepted) },
          {
            label: "Samples rejected",
            value: formatCount(rejectedSamples),
            title: `${formatPercent(rejectedSamples, accepted + rejectedSamples)} of samples received`,
          },
          { label: "Requests rejected", value: formatCount(rejectedRequests) },
          { label: "CPU spent ingesting", value: formatDuration(status.cpuSeconds) },
        ]}
      />
      {protocols.length === 0 ? (
        <Empty>
          Nothing ingested yet. Point Prometheus' or vmagent's <code>remote_write</code> at <code>/api/v1/write</code>,
          or add <code>scrape_configs</code> to the file given with <code>--config.file</code>.
        </Empty>
      ) : (
        <section class="card">
          <div class="card-header">
            <h2>By protocol</h2>
          </div>
          <table class="stack">
            <thead>
              <tr>
                <th>Protocol</th>
                <th class="num">Samples accepted</th>
                <th class="num">Series</th>
                <th class="num">Samples rejected</th>
                <th class="num">Requests rejected</th>
              </tr>
            </thead>
            <tbody>
              {protocols.map((p) => {
                const rejected = sum(p.samplesRejected);
                return (
                  <tr key={p.protocol} data-testid="protocol">
                    <td data-label="Protocol">
                      <ProtocolName id={p.protocol} />
                    </td>
                    <td class="num" data-label="Samples accepted">{formatCount(p.samples)}</td>
                    <td class="num" data-label="Series">{formatCount(p.series)}</td>
                    <td class="num" data-label="Samples rejected">
                      {rejected > 0 ? (
                        <Badge tone="bad" title={`${formatPercent(rejected, p.samples + rejected)} of received samples`}>
                          {formatCount(rejected)}
                        </Badge>
                      ) : (
                        "0"
                      )}
                    </td>
                    <td class="num" data-label="Requests rejected">
                      {sum(p.requestsRejected) > 0 ? <Badge tone="bad">{formatCount(sum(p.requestsRejected))}</Badge> : "0"}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </section>
      )}
      {reasons.length > 0 && (
        <section class="card">
          <div class="card-header">
            <h2>Rejections by reason</h2>
          </div>
          <table class="stack">
            <thead>
              <tr>
                <th>Reason</th>
                <th>Protocol</th>
                <th>Rejected</th>
                <th class="num">Count</th>
              </tr>
            </thead>
            <tbody>
              {reasons.map((r) => (
                <tr key={`${r.protocol} ${r.what} ${r.reason}`} data-testid="rejection">
                  <td class="mono" data-label="Reason">{r.reason}</td>
                  <td data-label="Protocol">
                    <ProtocolName id={r.protocol} />
                  </td>
                  <td data-label="Rejected">{r.what}</td>
                  <td class="num" data-label="Count">{formatCount(r.n)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </>
  );
}
