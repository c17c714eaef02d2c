// Storage (`/storage`): the engine's counters in total and per tenant
// (`api/v1/status/storage`) and its parts (`api/v1/status/tsdb/blocks`).
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { Empty, PageHeader } from "../components/controls";
import { KeyValueTable, Tiles } from "../components/tables";
import { formatByKey, formatBytes, formatCount, formatDuration, formatNumber, titleOfKey } from "../format";
import { PartsTable, type Part } from "./PartsTable";
import "../components/ui.css";

interface StorageStats {
  activeSeries: number;
  headSamples: number;
  storageBytes: number;
  walBytes: number;
  parts: number;
  partitions: number;
  samplesIngested: number;
  seriesCreated: number;
  merges: number;
  mergedBytes: number;
  flushes: number;
  maintenanceCpuSeconds: number;
  samplesRejected: Record<string, number>;
  /** Counters of the bucket, some of them per request kind. */
  objectStore: Record<string, number | Record<string, number>> | null;
}

interface StorageStatus {
  totals: StorageStats;
  tenants: ({ tenant: string } & StorageStats)[];
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

export function StoragePage(_props: PageProps) {
  const storage = useApi<StorageStatus>("api/v1/status/storage");
  const blocks = useApi<{ blocks: Part[] }>("api/v1/status/tsdb/blocks");
  const reload = () => {
    storage.reload();
    blocks.reload();
  };
  return (
    <div data-testid="page-storage">
      <PageHeader title="Storage" loading={storage.loading || blocks.loading} onRefresh={reload} />
      <Fetching fetched={storage} what="the storage statistics">
        {(s) => <Totals status={s} />}
      </Fetching>
      <Fetching fetched={blocks} what="the parts">
        {({ blocks: parts }) => (
          <section class="card">
            <div class="card-header">
              <h2>Parts</h2>
              <span class="muted">
                {formatCount(parts.length)} parts, {formatBytes(parts.reduce((a, p) => a + (p.bytes ?? 0), 0))}
              </span>
            </div>
            {parts.length === 0 ? (
              <div class="card-body">
                <Empty>No parts yet: samples stay in memory and in the WAL until the first flush.</Empty>
              </div>
            ) : (
              <PartsTable parts={parts} />
            )}
          </section>
        )}
      </Fetching>
    </div>
  );
}

function Totals({ status }: { status: StorageStatus }) {
  const t = status.totals;
  const rejected = Object.entries(t.samplesRejected ?? {}).filter(([, n]) => n > 0);
  return (
    <>
      <Tiles
        tiles={[
          { label: "Active series", value: formatCount(t.activeSeries) },
          { label: "Samples in memory", value: formatCount(t.headSamples), title: "Not yet flushed to parts" },
          { label: "Bytes on disk", value: formatBytes(t.storageBytes), title: "Parts, without the WAL" },
          { label: "WAL", value: formatBytes(t.walBytes) },
          { label: "Parts", value: formatCount(t.parts) },
          { label: "Partitions", value: formatCount(t.partitions), title: "Days with data" },
          { label: "Samples ingested", value: formatCount(t.samplesIngested), title: "Since start" },
          { label: "Series created", value: formatCount(t.seriesCreated), title: "Since start" },
          { label: "Flushes", value: formatCount(t.flushes) },
          { label: "Merges", value: formatCount(t.merges), title: `${formatBytes(t.mergedBytes)} merged` },
          { label: "Bytes merged", value: formatBytes(t.mergedBytes) },
          { label: "Maintenance CPU", value: formatDuration(t.maintenanceCpuSeconds), title: "CPU time of flushes and merges" },
        ]}
      />
      <div class="status-grid">
        <section class="card">
          <div class="card-header">
            <h2>Rejected samples</h2>
            <span class="muted">{formatCount(sum(t.samplesRejected ?? {}))} since start</span>
          </div>
          <div class="card-body">
            {rejected.length === 0 ? (
              <span class="muted">None rejected.</span>
            ) : (
              <KeyValueTable rows={rejected.sort((a, b) => b[1] - a[1]).map(([reason, n]) => [reason, formatCount(n)])} />
            )}
          </div>
        </section>
        {t.objectStore && (
          <section class="card">
            <div class="card-header">
              <h2>Object store</h2>
            </div>
            <div class="card-body">
              <KeyValueTable
                rows={Object.entries(t.objectStore).map(([k, v]) => [titleOfKey(k), <Counter name={k} value={v} />])}
              />
            </div>
          </section>
        )}
      </div>
      {status.tenants.length > 0 && <Tenants tenants={status.tenants} />}
    </>
  );
}

/** A counter, or counters by kind ("get 12 · put 3"). */
function Counter({ name, value }: { name: string; value: number | Record<string, number> }) {
  if (typeof value === "number") return <>{formatByKey(name, value)}</>;
  const entries = Object.entries(value);
  if (entries.length === 0) return <span class="muted">none</span>;
  return (
    <>
      {entries.map(([kind, n], i) => (
        <span key={kind}>
          {i > 0 && " · "}
          <span class="muted">{kind}</span> {formatByKey(name, n)}
        </span>
      ))}
    </>
  );
}

function Tenants({ tenants }: { tenants: StorageStatus["tenants"] }) {
  return (
    <section class="card">
      <div class="card-header">
        <h2>Tenants</h2>
        <span class="muted">{tenants.length}</span>
      </div>
      <div class="scroll-x">
        <table>
          <thead>
            <tr>
              <th>Tenant</th>
              <th class="num">Active series</th>
              <th class="num">Samples ingested</th>
              <th class="num">Rejected</th>
              <th class="num">On disk</th>
              <th class="num">WAL</th>
              <th class="num">Parts</th>
              <th class="num">Partitions</th>
              <th class="num">Bytes / sample</th>
            </tr>
          </thead>
          <tbody>
            {[...tenants]
              .sort((a, b) => b.activeSeries - a.activeSeries)
              .map((t) => (
                <tr key={t.tenant} data-testid="tenant">
                  <td class="mono">{t.tenant}</td>
                  <td class="num">{formatCount(t.activeSeries)}</td>
                  <td class="num">{formatCount(t.samplesIngested)}</td>
                  <td class="num">{formatCount(sum(t.samplesRejected ?? {}))}</td>
                  <td class="num">{formatBytes(t.storageBytes)}</td>
                  <td class="num">{formatBytes(t.walBytes)}</td>
                  <td class="num">{formatCount(t.parts)}</td>
                  <td class="num">{formatCount(t.partitions)}</td>
                  <td class="num" title="Bytes on disk per sample ingested since start (a rough compression figure)">
                    {t.samplesIngested > 0 ? formatNumber(t.storageBytes / t.samplesIngested) : "–"}
                  </td>
                </tr>
              ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
