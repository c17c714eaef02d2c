// Rules (`/rules`): every rule group with its evaluation, and each rule's
// health, last error, last evaluation and duration.
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { Empty, PageHeader, SearchInput, StateFilter } from "../components/controls";
import { Badge, LabelBadges, StateBadge } from "../components/badges";
import { PageLink } from "../components/links";
import { labelsText, matchesSearch, setSearchParams } from "../components/urlState";
import { formatDuration, formatIso, formatRelative } from "../format";
import { NoRules, RuleQuery } from "./RuleParts";
import { RULE_HEALTHS, type Rule, type RuleGroup, type RuleHealth, type RulesResult } from "./rulesTypes";
import "../components/ui.css";

const RULE_TYPES = ["alerting", "recording"] as const;

export function RulesPage({ location }: PageProps) {
  const health = location.search.getAll("health");
  const types = location.search.getAll("type");
  const search = location.search.get("search") ?? "";
  const fetched = useApi<RulesResult>("api/v1/rules");
  return (
    <div data-testid="page-rules">
      <PageHeader title="Rules" loading={fetched.loading} onRefresh={fetched.reload} autoRefresh />
      <Fetching fetched={fetched} what="the rules">
        {({ groups }) => {
          const all = groups.flatMap((g) => g.rules);
          const healthCounts: Partial<Record<RuleHealth, number>> = {};
          const typeCounts: Partial<Record<Rule["type"], number>> = {};
          for (const r of all) {
            healthCounts[r.health] = (healthCounts[r.health] ?? 0) + 1;
            typeCounts[r.type] = (typeCounts[r.type] ?? 0) + 1;
          }
          const matches = (r: Rule) =>
            (health.length === 0 || health.includes(r.health)) &&
            (types.length === 0 || types.includes(r.type)) &&
            matchesSearch(search, r.name, r.query, labelsText(r.labels));
          return (
            <>
              <div class="toolbar">
                <StateFilter
                  label="Show rules of health"
                  states={RULE_HEALTHS}
                  selected={health}
                  counts={healthCounts}
                  onChange={(s) => setSearchParams(location, { health: s })}
                />
                <StateFilter
                  label="Show rules of type"
                  states={RULE_TYPES}
                  selected={types}
                  counts={typeCounts}
                  onChange={(s) => setSearchParams(location, { type: s })}
                />
                <SearchInput
                  label="Search rules"
                  placeholder="Search by rule name, label or expression"
                  value={search}
                  onInput={(v) => setSearchParams(location, { search: v })}
                />
              </div>
              {all.length === 0 ? (
                <NoRules kind="rules" />
              ) : (
                <Groups groups={groups} matches={matches} />
              )}
            </>
          );
        }}
      </Fetching>
    </div>
  );
}

function Groups({ groups, matches }: { groups: RuleGroup[]; matches: (r: Rule) => boolean }) {
  const shown = groups.map((g) => ({ group: g, rules: g.rules.filter(matches) })).filter((g) => g.rules.length > 0);
  if (shown.length === 0) return <Empty>No rule matches these filters.</Empty>;
  return (
    <>
      {shown.map(({ group, rules }) => {
        const errors = group.rules.filter((r) => r.health === "err").length;
        return (
          <section class="card" key={`${group.file}\n${group.name}`} data-testid="rule-group">
            <div class="card-header">
              <h2>{group.name}</h2>
              <span class="muted mono">{group.file}</span>
              <span class="end">
                {errors > 0 && <Badge tone="bad">{errors === 1 ? "1 error" : `${errors} errors`}</Badge>}
                <Badge title="Evaluation interval">every {formatDuration(group.interval)}</Badge>
                <Badge title={`Last evaluation: ${formatIso(group.lastEvaluation)}`}>
                  evaluated {formatRelative(group.lastEvaluation)}
                </Badge>
                <Badge title="How long the last evaluation of the whole group took">
                  took {formatDuration(group.evaluationTime)}
                </Badge>
              </span>
            </div>
            <table class="rules-table stack">
              <thead>
                <tr>
                  <th>Rule</th>
                  <th>Health</th>
                  <th>Last evaluation</th>
                  <th class="num">Duration</th>
                </tr>
              </thead>
              <tbody>
                {rules.map((r, i) => (
                  <RuleRow rule={r} key={i} />
                ))}
              </tbody>
            </table>
          </section>
        );
      })}
    </>
  );
}

function RuleRow({ rule }: { rule: Rule }) {
  return (
    <tr data-testid="rule">
      <td class="rule-cell" data-label="Rule">
        <div class="rule-title">
          <Badge tone="info">{rule.type === "alerting" ? "alert" : "record"}</Badge>
          {rule.type === "alerting" ? (
            <PageLink path="/alerts" search={new URLSearchParams({ search: rule.name })} class="rule-name" title="Show on the alerts page">
              {rule.name}
            </PageLink>
          ) : (
            <span class="rule-name mono">{rule.name}</span>
          )}
          {rule.type === "alerting" && rule.state !== "inactive" && <StateBadge state={rule.state} />}
        </div>
        <RuleQuery rule={rule} />
        {rule.type === "alerting" && rule.duration > 0 && (
          <div class="muted">
            for {formatDuration(rule.duration)}
            {(rule.keepFiringFor ?? 0) > 0 && `, keep firing for ${formatDuration(rule.keepFiringFor ?? 0)}`}
          </div>
        )}
        {rule.labels && Object.keys(rule.labels).length > 0 && <LabelBadges labels={rule.labels} />}
      </td>
      <td data-label="Health">
        <StateBadge state={rule.health} />
        {rule.lastError && <div class="error-text">{rule.lastError}</div>}
      </td>
      <td class="nowrap" data-label="Last evaluation" title={formatIso(rule.lastEvaluation)}>
        {formatRelative(rule.lastEvaluation)}
      </td>
      <td class="num" data-label="Duration">{formatDuration(rule.evaluationTime)}</td>
    </tr>
  );
}
