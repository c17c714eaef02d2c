// Alerts (`/alerts`): the alerting rules by file and group with their state,
// the alerts each one holds, and every active alert at the top.
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { Empty, PageHeader, SearchInput, StateFilter } from "../components/controls";
import { Badge, LabelBadges, StateBadge } from "../components/badges";
import { PageLink } from "../components/links";
import { labelsText, matchesSearch, setSearchParams } from "../components/urlState";
import { formatDateTime, formatIso, formatRelative, formatSampleValue } from "../format";
import { AlertingRuleDefinition, NoRules } from "./RuleParts";
import { ALERT_STATES, type Alert, type AlertState, type AlertingRule, type AlertsResult, type RulesResult } from "./rulesTypes";
import "../components/ui.css";

export function AlertsPage({ location }: PageProps) {
  const states = location.search.getAll("state");
  const search = location.search.get("search") ?? "";
  const rules = useApi<RulesResult<AlertingRule>>("api/v1/rules", { type: "alert" });
  const alerts = useApi<AlertsResult>("api/v1/alerts");
  const reload = () => {
    rules.reload();
    alerts.reload();
  };
  return (
    <div data-testid="page-alerts">
      <PageHeader title="Alerts" loading={rules.loading || alerts.loading} onRefresh={reload} autoRefresh />
      <Fetching fetched={rules} what="the alerting rules">
        {(data) => {
          const counts = countStates(data.groups.flatMap((g) => g.rules));
          return (
            <>
              <div class="toolbar">
                <StateFilter
                  label="Show rules in state"
                  states={ALERT_STATES}
                  selected={states}
                  counts={counts}
                  onChange={(s) => setSearchParams(location, { state: s })}
                />
                <SearchInput
                  label="Search alerting rules"
                  placeholder="Search by rule name, label or expression"
                  value={search}
                  onInput={(v) => setSearchParams(location, { search: v })}
                />
              </div>
              <Fetching fetched={alerts} what="the active alerts">
                {(a) => <ActiveAlerts alerts={a.alerts} states={states} search={search} />}
              </Fetching>
              <RuleGroups groups={data.groups} states={states} search={search} />
            </>
          );
        }}
      </Fetching>
    </div>
  );
}

function countStates(rules: AlertingRule[]): Partial<Record<AlertState, number>> {
  const counts: Partial<Record<AlertState, number>> = {};
  for (const r of rules) counts[r.state] = (counts[r.state] ?? 0) + 1;
  return counts;
}

function ruleMatches(rule: AlertingRule, states: string[], search: string): boolean {
  if (states.length > 0 && !states.includes(rule.state)) return false;
  return matchesSearch(search, rule.name, rule.query, labelsText(rule.labels), ...rule.alerts.map((a) => labelsText(a.labels)));
}

/** Every pending or firing alert, firing first, as `api/v1/alerts` lists them. */
function ActiveAlerts({ alerts, states, search }: { alerts: Alert[]; states: string[]; search: string }) {
  const shown = alerts
    .filter((a) => (states.length === 0 || states.includes(a.state)) && matchesSearch(search, labelsText(a.labels)))
    .sort((a, b) => (a.state === b.state ? 0 : a.state === "firing" ? -1 : 1));
  if (shown.length === 0) return null;
  return (
    <section class="card">
      <div class="card-header">
        <h2>Active alerts</h2>
        <span class="muted">{shown.length === alerts.length ? alerts.length : `${shown.length} of ${alerts.length}`}</span>
      </div>
      <AlertTable alerts={shown} />
    </section>
  );
}

function AlertTable({ alerts }: { alerts: Alert[] }) {
  return (
    <table class="stack">
      <thead>
        <tr>
          <th>Labels</th>
          <th>State</th>
          <th>Active since</th>
          <th class="num">Value</th>
        </tr>
      </thead>
      <tbody>
        {alerts.map((a, i) => (
          <tr key={i} data-testid="alert">
            <td data-label="Labels">
              <LabelBadges labels={a.labels} />
              {a.annotations?.summary && <div class="muted annotation">{a.annotations.summary}</div>}
            </td>
            <td data-label="State">
              <StateBadge state={a.state} />
              {a.keepFiringSince && (
                <div class="muted" title={formatIso(a.keepFiringSince)}>
                  kept firing since {formatRelative(a.keepFiringSince)}
                </div>
              )}
            </td>
            <td class="nowrap" data-label="Active since" title={a.activeAt ? formatIso(a.activeAt) : undefined}>
              {a.activeAt ? (
                <>
                  {formatRelative(a.activeAt)}
                  <div class="muted">{formatDateTime(a.activeAt)}</div>
                </>
              ) : (
                "–"
              )}
            </td>
            <td class="num mono" data-label="Value">{formatSampleValue(a.value)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function RuleGroups({
  groups,
  states,
  search,
}: {
  groups: RulesResult<AlertingRule>["groups"];
  states: string[];
  search: string;
}) {
  if (groups.every((g) => g.rules.length === 0)) return <NoRules kind="alerting rules" />;
  const shown = groups
    .map((g) => ({ group: g, rules: g.rules.filter((r) => ruleMatches(r, states, search)) }))
    .filter((g) => g.rules.length > 0);
  if (shown.length === 0) return <Empty>No alerting rule matches these filters.</Empty>;
  return (
    <>
      {shown.map(({ group, rules }) => {
        const counts = countStates(group.rules);
        return (
          <section class="card" key={`${group.file}\n${group.name}`} data-testid="alert-group">
            <div class="card-header">
              <h2>{group.name}</h2>
              <span class="muted mono">{group.file}</span>
              <span class="end">
                {ALERT_STATES.filter((s) => counts[s]).map((s) => (
                  <StateBadge state={s} key={s}>
                    {s} ({counts[s]})
                  </StateBadge>
                ))}
              </span>
            </div>
            <div class="rule-list">
              {rules.map((r) => (
                <AlertingRuleItem rule={r} key={r.name + r.query} />
              ))}
            </div>
          </section>
        );
      })}
    </>
  );
}

/** One alerting rule, folded to its name and state; unfolds to its definition and alerts. */
function AlertingRuleItem({ rule }: { rule: AlertingRule }) {
  const firing = rule.alerts.filter((a) => a.state === "firing").length;
  const pending = rule.alerts.filter((a) => a.state === "pending").length;
  return (
    <details class={`rule-item state-${rule.state}`} data-testid="alert-rule">
      <summary>
        <span class="caret" />
        <span class="rule-name">{rule.name}</span>
        <span class="end">
          {firing > 0 && <StateBadge state="firing">firing ({firing})</StateBadge>}
          {pending > 0 && <StateBadge state="pending">pending ({pending})</StateBadge>}
          {firing + pending === 0 && <StateBadge state={rule.state} />}
          {rule.health === "err" && <Badge tone="bad">error</Badge>}
        </span>
      </summary>
      <div class="rule-body">
        {rule.lastError && <div class="error">{rule.lastError}</div>}
        <AlertingRuleDefinition rule={rule} />
        {rule.alerts.length > 0 && (
          <>
            <h3>Alerts</h3>
            <AlertTable alerts={rule.alerts} />
          </>
        )}
        <p class="muted">
          Evaluated {formatRelative(rule.lastEvaluation)} · see it on the{" "}
          <PageLink path="/rules" search={new URLSearchParams({ search: rule.name })}>
            rules page
          </PageLink>
        </p>
      </div>
    </details>
  );
}
