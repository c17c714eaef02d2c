// The cardinality explorer (`/cardinality`, Prometheus' `/tsdb-status`):
// what holds the series, from `api/v1/status/tsdb`, narrowed by day, by a
// series selector and by a focus label, as VictoriaMetrics' vmui does.
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { Empty, PageHeader } from "../components/controls";
import { Tiles, type Tile } from "../components/tables";
import { setSearchParams } from "../components/urlState";
import { formatCount, formatDateTime, utcDate } from "../format";
import { labelName, metricSelector, narrowSelector, pairSelector, splitPair } from "../selectors";
import { CardinalityTable } from "./CardinalityTable";
import { CardinalityControls } from "./CardinalityControls";
import { DEFAULT_TOP_N, type CardinalityQuery, type TsdbStatus } from "./cardinalityTypes";
import "../components/ui.css";

function readQuery(search: URLSearchParams): CardinalityQuery {
  const topN = Number(search.get("topN"));
  return {
    date: search.get("date") ?? "",
    match: search.get("match[]") ?? "",
    focusLabel: search.get("focusLabel") ?? "",
    topN: Number.isInteger(topN) && topN > 0 ? topN : DEFAULT_TOP_N,
  };
}

export function CardinalityPage({ location }: PageProps) {
  const query = readQuery(location.search);
  const update = (changes: Partial<CardinalityQuery>) => {
    const next = { ...query, ...changes };
    setSearchParams(location, {
      date: next.date,
      "match[]": next.match,
      focusLabel: next.focusLabel,
      topN: next.topN === DEFAULT_TOP_N ? undefined : String(next.topN),
    });
  };
  // `limit` is Prometheus' name of the list length, `topN` VictoriaMetrics'.
  const params = {
    limit: query.topN,
    topN: query.topN,
    "match[]": query.match || undefined,
    focusLabel: query.focusLabel || undefined,
  };
  const fetched = useApi<TsdbStatus>("api/v1/status/tsdb", { ...params, date: query.date || undefined });
  // For one day, the day before too: what grew is what to look at (as vmui does).
  const dayBefore = query.date ? previousDay(query.date) : "";
  const before = useApi<TsdbStatus>(dayBefore ? "api/v1/status/tsdb" : null, { ...params, date: dayBefore });
  return (
    <div data-testid="page-cardinality">
      <PageHeader
        title="Cardinality"
        loading={fetched.loading}
        onRefresh={() => {
          fetched.reload();
          before.reload();
        }}
      />
      <CardinalityControls query={query} update={update} />
      <Fetching fetched={fetched} what="the cardinality statistics">
        {(status) => (
          // The day before's lists only once they are for the day shown.
          <Explorer status={status} before={before.loading ? undefined : before.answer?.data} query={query} update={update} />
        )}
      </Fetching>
    </div>
  );
}

/** An int64 bound means "no data" in Prometheus' head stats. */
function validTime(ms: number | undefined): ms is number {
  return ms !== undefined && Math.abs(ms) < 8.64e15;
}

/** The UTC day before a YYYY-MM-DD day. */
function previousDay(date: string): string {
  const t = Date.parse(`${date}T00:00:00Z`);
  return Number.isNaN(t) ? "" : utcDate(-1, new Date(t));
}

function Explorer({
  status,
  before,
  query,
  update,
}: {
  status: TsdbStatus;
  before?: TsdbStatus;
  query: CardinalityQuery;
  update: (c: Partial<CardinalityQuery>) => void;
}) {
  const totalSeries = status.totalSeries ?? status.headStats?.numSeries ?? 0;
  const totalPairs = status.totalLabelValuePairs ?? status.headStats?.numLabelPairs;
  const metricNames = status.labelValueCountByLabelName.find((s) => s.name === "__name__")?.value;
  const head = status.headStats;
  const tiles: Tile[] = [{ label: query.match ? "Matching series" : "Series", value: formatCount(totalSeries) }];
  if (totalPairs !== undefined) tiles.push({ label: "Label pairs", value: formatCount(totalPairs) });
  if (metricNames !== undefined) tiles.push({ label: "Metric names", value: formatCount(metricNames) });
  if (head && validTime(head.minTime) && validTime(head.maxTime)) {
    tiles.push({ label: "Oldest sample", value: <span class="small-value">{formatDateTime(head.minTime)}</span> });
    tiles.push({ label: "Newest sample", value: <span class="small-value">{formatDateTime(head.maxTime)}</span> });
  }
  const scope = [
    query.date ? `on ${query.date} (UTC)` : "over all retained data",
    query.match ? `matching ${query.match}` : "",
  ]
    .filter(Boolean)
    .join(", ");
  const narrow = (name: string, value: string) => update({ match: narrowSelector(query.match, name, value) });
  // A server that knows VictoriaMetrics' parameters answers with its totals;
  // without them, the selector was most likely not applied.
  const unfiltered = query.match !== "" && status.totalSeries === undefined;
  return (
    <>
      <p class="muted">Series {scope}.</p>
      {unfiltered && (
        <div class="warning">
          This server's answer has no <code>totalSeries</code>, the sign of a server that does not take a series
          selector (<code>match[]</code>): the figures may be for all series.
        </div>
      )}
      <Tiles tiles={tiles} />
      {totalSeries === 0 && status.seriesCountByMetricName.length === 0 ? (
        <Empty>
          No series {scope}.{" "}
          {query.match || query.date
            ? "Widen the day or the selector."
            : "Once data arrives (remote write, scrapes, imports: see the ingestion page), its series show here."}
        </Empty>
      ) : (
        <Lists
          status={status}
          before={before}
          query={query}
          update={update}
          totalSeries={totalSeries}
          narrow={narrow}
        />
      )}
    </>
  );
}

function Lists({
  status,
  before,
  query,
  update,
  totalSeries,
  narrow,
}: {
  status: TsdbStatus;
  before?: TsdbStatus;
  query: CardinalityQuery;
  update: (c: Partial<CardinalityQuery>) => void;
  totalSeries: number;
  narrow: (name: string, value: string) => void;
}) {
  const top = `Top ${query.topN}`;
  return (
    <>
      {query.focusLabel && (
        <FocusValues status={status} query={query} totalSeries={totalSeries} narrow={narrow} />
      )}
      <div class="cardinality-grid">
        <CardinalityTable
          title="Metric names by series"
          description={top}
          nameHeader="Metric name"
          valueHeader="Series"
          stats={status.seriesCountByMetricName}
          previous={before?.seriesCountByMetricName}
          limit={query.topN}
          total={totalSeries}
          testIds={{ row: "top-metric", name: "metric-name", value: "metric-series" }}
          row={(s) => ({
            name: s.name,
            expr: metricSelector(s.name),
            focus: { label: `Focus on metric ${s.name}`, apply: () => narrow("__name__", s.name) },
          })}
        />
        {status.seriesCountByLabelName && (
          <CardinalityTable
            title="Label names by series"
            description={top}
            nameHeader="Label name"
            valueHeader="Series"
            stats={status.seriesCountByLabelName}
            previous={before?.seriesCountByLabelName}
            limit={query.topN}
            total={totalSeries}
            row={(s) => labelRow(s.name, query.match, update)}
          />
        )}
        <CardinalityTable
          title="Label names by number of values"
          description={top}
          nameHeader="Label name"
          valueHeader="Values"
          stats={status.labelValueCountByLabelName}
          previous={before?.labelValueCountByLabelName}
          limit={query.topN}
          row={(s) => labelRow(s.name, query.match, update)}
        />
        <CardinalityTable
          title="Label pairs by series"
          description={top}
          nameHeader="Label pair"
          valueHeader="Series"
          stats={status.seriesCountByLabelValuePair}
          previous={before?.seriesCountByLabelValuePair}
          limit={query.topN}
          total={totalSeries}
          row={(s) => {
            const [name, value] = splitPair(s.name);
            return {
              name: s.name,
              expr: pairSelector(name, value),
              focus: { label: `Focus on ${s.name}`, apply: () => narrow(name, value) },
            };
          }}
        />
      </div>
    </>
  );
}

/** A label name's row: the query counts series per value; focus makes it the focus label. */
function labelRow(name: string, match: string, update: (c: Partial<CardinalityQuery>) => void) {
  // The series that have the label (within the selector), counted per value.
  const having = narrowSelector(match, name, "", "!=");
  return {
    name,
    expr: `count by (${labelName(name)}) (${having})`,
    focus: { label: `Focus on label ${name}`, apply: () => update({ focusLabel: name }) },
  };
}

function FocusValues({
  status,
  query,
  totalSeries,
  narrow,
}: {
  status: TsdbStatus;
  query: CardinalityQuery;
  totalSeries: number;
  narrow: (name: string, value: string) => void;
}) {
  const values = status.seriesCountByFocusLabelValue;
  if (!values) {
    return (
      <div class="info">
        This server does not report series per value of a focus label (<code>seriesCountByFocusLabelValue</code>); the
        label pairs below include those of <code>{query.focusLabel}</code>.
      </div>
    );
  }
  const label = query.focusLabel;
  return (
    <CardinalityTable
      title={`Values of ${label} by series`}
      description={`Top ${query.topN}`}
      nameHeader={label}
      valueHeader="Series"
      stats={values}
      total={totalSeries}
      row={(s) => ({
        name: s.name,
        expr: narrowSelector(query.match, label, s.name),
        focus: { label: `Focus on ${label}="${s.name}"`, apply: () => narrow(label, s.name) },
      })}
    />
  );
}
