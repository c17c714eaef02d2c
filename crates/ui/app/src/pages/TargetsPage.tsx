// Targets (`/targets`): the scrape targets by pool, with their health, last
// scrape and error, filtered by pool, health and text (kept in the URL).
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { Empty, PageHeader, SearchInput, StateFilter } from "../components/controls";
import { Badge, LabelBadges, StateBadge } from "../components/badges";
import { labelsText, matchesSearch, setSearchParams } from "../components/urlState";
import { formatDuration, formatIso, formatRelative } from "../format";
import "../components/ui.css";

interface Target {
  discoveredLabels: Record<string, string>;
  labels: Record<string, string>;
  scrapePool: string;
  scrapeUrl: string;
  /** The URL with this host's name, for people on other machines. */
  globalUrl: string;
  lastError: string;
  lastScrape: string;
  /** Seconds. */
  lastScrapeDuration: number;
  health: "up" | "down" | "unknown";
  scrapeInterval: string;
  scrapeTimeout: string;
}

interface TargetsResult {
  activeTargets: Target[];
  droppedTargetCounts?: Record<string, number>;
}

const HEALTHS = ["up", "down", "unknown"] as const;

export function TargetsPage({ location }: PageProps) {
  const pool = location.search.get("pool") ?? "";
  const health = location.search.getAll("health");
  const search = location.search.get("search") ?? "";
  const pools = useApi<{ scrapePools: string[] }>("api/v1/scrape_pools");
  const targets = useApi<TargetsResult>("api/v1/targets", { state: "active", scrapePool: pool || undefined });
  const reload = () => {
    pools.reload();
    targets.reload();
  };
  // The configured pools, and any a target names (should the pool list fail).
  const poolNames = [
    ...new Set([
      ...(pools.answer?.data.scrapePools ?? []),
      ...(targets.answer?.data.activeTargets.map((t) => t.scrapePool) ?? []),
      ...(pool ? [pool] : []),
    ]),
  ];
  return (
    <div data-testid="page-targets">
      <PageHeader title="Targets" loading={pools.loading || targets.loading} onRefresh={reload} autoRefresh />
      <div class="toolbar">
        <label>
          Pool
          <select value={pool} onChange={(e) => setSearchParams(location, { pool: (e.target as HTMLSelectElement).value })}>
            <option value="">All pools</option>
            {poolNames.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <StateFilter
          label="Show targets of health"
          states={HEALTHS}
          selected={health}
          counts={targets.answer && countHealth(targets.answer.data.activeTargets)}
          onChange={(s) => setSearchParams(location, { health: s })}
        />
        <SearchInput
          label="Search targets"
          placeholder="Search by endpoint or label"
          value={search}
          onInput={(v) => setSearchParams(location, { search: v })}
        />
      </div>
      <Fetching fetched={targets} what="the targets">
        {(data) => (
          <Pools
            targets={data.activeTargets}
            dropped={data.droppedTargetCounts ?? {}}
            poolNames={pools.answer?.data.scrapePools.filter((p) => !pool || p === pool) ?? []}
            health={health}
            search={search}
          />
        )}
      </Fetching>
    </div>
  );
}

function countHealth(targets: Target[]): Partial<Record<Target["health"], number>> {
  const counts: Partial<Record<Target["health"], number>> = {};
  for (const t of targets) counts[t.health] = (counts[t.health] ?? 0) + 1;
  return counts;
}

function Pools({
  targets,
  dropped,
  poolNames,
  health,
  search,
}: {
  targets: Target[];
  dropped: Record<string, number>;
  poolNames: string[];
  health: string[];
  search: string;
}) {
  // Pools in the configuration's order; a pool whose discovery found nothing still shows.
  const byPool = new Map<string, Target[]>(poolNames.map((p) => [p, []]));
  for (const t of targets) {
    const list = byPool.get(t.scrapePool);
    if (list) list.push(t);
    else byPool.set(t.scrapePool, [t]);
  }
  if (byPool.size === 0) {
    return (
      <Empty>
        No scrape targets. Cairn scrapes the <code>scrape_configs</code> of the file given with{" "}
        <code>--config.file</code>; data pushed to it (remote write, import) needs no targets.
      </Empty>
    );
  }
  const filtering = health.length > 0 || search.trim() !== "";
  const shown = [...byPool].map(([pool, all]) => ({
    pool,
    all,
    targets: all.filter(
      (t) =>
        (health.length === 0 || health.includes(t.health)) &&
        matchesSearch(search, t.scrapeUrl, labelsText(t.labels)),
    ),
  }));
  const visible = filtering ? shown.filter((p) => p.targets.length > 0) : shown;
  if (visible.length === 0) return <Empty>No target matches these filters.</Empty>;
  return (
    <>
      {visible.map(({ pool, all, targets: list }) => {
        const up = all.filter((t) => t.health === "up").length;
        return (
          <details class="card" open key={pool} data-testid="target-pool">
            <summary class="card-header">
              <span class="caret" />
              <h2>{pool}</h2>
              <span class="end">
                <Badge tone={all.length === 0 ? "neutral" : up === all.length ? "ok" : up === 0 ? "bad" : "warn"}>
                  {up} / {all.length} up
                </Badge>
                {(dropped[pool] ?? 0) > 0 && (
                  <Badge title="Targets discovered but dropped by relabelling">{dropped[pool]} dropped</Badge>
                )}
              </span>
            </summary>
            {all.length === 0 ? (
              <div class="card-body muted">Service discovery found no targets in this pool.</div>
            ) : (
              <TargetTable targets={list} />
            )}
          </details>
        );
      })}
    </>
  );
}

function TargetTable({ targets }: { targets: Target[] }) {
  return (
    <table class="targets-table stack">
      <thead>
        <tr>
          <th>Endpoint</th>
          <th>Labels</th>
          <th>Last scrape</th>
          <th>State</th>
        </tr>
      </thead>
      <tbody>
        {targets.map((t) => (
          <tr key={t.scrapeUrl + labelsText(t.labels)} data-testid="target">
            <td data-label="Endpoint">
              <a href={t.globalUrl || t.scrapeUrl} target="_blank" rel="noreferrer" class="mono endpoint">
                {t.scrapeUrl}
              </a>
              <div class="muted">
                every {t.scrapeInterval}, timeout {t.scrapeTimeout}
              </div>
            </td>
            <td data-label="Labels">
              <LabelBadges labels={t.labels} />
              <details class="discovered">
                <summary>Discovered labels</summary>
                <LabelBadges labels={t.discoveredLabels} />
              </details>
            </td>
            <td class="nowrap" data-label="Last scrape" title={formatIso(t.lastScrape)}>
              {formatRelative(t.lastScrape)}
              {t.lastScrapeDuration > 0 && <div class="muted">took {formatDuration(t.lastScrapeDuration)}</div>}
            </td>
            <td data-label="State">
              <StateBadge state={t.health} />
              {t.lastError && <div class="error-text">{t.lastError}</div>}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
