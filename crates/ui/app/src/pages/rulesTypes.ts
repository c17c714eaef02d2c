// The answers of `api/v1/rules` and `api/v1/alerts`, as Prometheus writes them.

export type AlertState = "inactive" | "pending" | "firing" | "unknown";
export type RuleHealth = "ok" | "err" | "unknown";

export interface Alert {
  labels: Record<string, string>;
  /** Prometheus always sends them; other servers may not. */
  annotations?: Record<string, string>;
  state: AlertState;
  /** RFC 3339. */
  activeAt?: string;
  /** Set while the alert fires on only because of keep_firing_for. */
  keepFiringSince?: string;
  /** The sample value as a string ("1e+00"). */
  value: string;
}

interface RuleCommon {
  name: string;
  query: string;
  health: RuleHealth;
  lastError?: string;
  /** RFC 3339. */
  lastEvaluation: string;
  /** Seconds. */
  evaluationTime: number;
  labels?: Record<string, string>;
}

export interface AlertingRule extends RuleCommon {
  type: "alerting";
  annotations: Record<string, string>;
  /** `for`, seconds. */
  duration: number;
  /** `keep_firing_for`, seconds. */
  keepFiringFor?: number;
  state: AlertState;
  alerts: Alert[];
}

export interface RecordingRule extends RuleCommon {
  type: "recording";
}

export type Rule = AlertingRule | RecordingRule;

export interface RuleGroup<R extends Rule = Rule> {
  name: string;
  file: string;
  /** Seconds. */
  interval: number;
  limit?: number;
  lastEvaluation: string;
  evaluationTime: number;
  rules: R[];
}

export interface RulesResult<R extends Rule = Rule> {
  groups: RuleGroup<R>[];
}

export interface AlertsResult {
  alerts: Alert[];
}

export const ALERT_STATES = ["inactive", "pending", "firing"] as const;
export const RULE_HEALTHS = ["ok", "err", "unknown"] as const;
