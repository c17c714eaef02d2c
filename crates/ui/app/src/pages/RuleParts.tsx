// Pieces of a rule shown on both the alerts and the rules page.
import type { ComponentChildren } from "preact";
import { QueryLink } from "../components/links";
import { LabelBadges } from "../components/badges";
import { KeyValueTable } from "../components/tables";
import { Empty } from "../components/controls";
import { formatDuration } from "../format";
import type { AlertingRule, Rule } from "./rulesTypes";

/** The rule's expression, opening on the query page. */
export function RuleQuery({ rule }: { rule: Rule }) {
  return (
    <QueryLink
      expr={rule.query}
      tab={rule.type === "alerting" ? "table" : "graph"}
      class="query"
      title="Open this expression on the query page"
    >
      {rule.query}
    </QueryLink>
  );
}

/** What an alerting rule is: expression, `for`, `keep_firing_for`, labels, annotations. */
export function AlertingRuleDefinition({ rule }: { rule: AlertingRule }) {
  const rows: [string, ComponentChildren][] = [["expr", <RuleQuery rule={rule} />]];
  if (rule.duration > 0) rows.push(["for", formatDuration(rule.duration)]);
  if ((rule.keepFiringFor ?? 0) > 0) rows.push(["keep_firing_for", formatDuration(rule.keepFiringFor ?? 0)]);
  rows.push(["labels", <LabelBadges labels={rule.labels} />]);
  return (
    <>
      <KeyValueTable rows={rows} />
      <Annotations annotations={rule.annotations} />
    </>
  );
}

export function Annotations({ annotations }: { annotations: Record<string, string> }) {
  const entries = Object.entries(annotations);
  if (entries.length === 0) return null;
  return (
    <KeyValueTable
      caption="Annotations"
      rows={entries.map(([k, v]) => [k, <span class="annotation">{v}</span>])}
    />
  );
}

/** What to say when a server has no rules at all. */
export function NoRules({ kind }: { kind: "alerting rules" | "rules" }) {
  return (
    <Empty>
      No {kind} are loaded. Rules come from the files listed under <code>rule_files</code> in the file given with{" "}
      <code>--config.file</code>; see the <a href="https://prometheus.io/docs/prometheus/latest/configuration/recording_rules/" target="_blank" rel="noreferrer">
        rule file format
      </a>
      .
    </Empty>
  );
}
