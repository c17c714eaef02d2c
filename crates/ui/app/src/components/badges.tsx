// Small coloured markers: label pairs, health and alert states, counts.
import type { ComponentChildren } from "preact";

export type Tone = "ok" | "bad" | "warn" | "neutral" | "info";

export function Badge({ tone = "neutral", children, title }: { tone?: Tone; children: ComponentChildren; title?: string }) {
  return (
    <span class={`badge tone-${tone}`} title={title}>
      {children}
    </span>
  );
}

/** The tone of a rule or target health, or an alert state, as Prometheus colours them. */
export function toneOf(state: string): Tone {
  switch (state) {
    case "ok":
    case "up":
    case "inactive":
      return "ok";
    case "err":
    case "down":
    case "firing":
      return "bad";
    case "pending":
      return "warn";
    default:
      return "neutral";
  }
}

export function StateBadge({ state, children }: { state: string; children?: ComponentChildren }) {
  return <Badge tone={toneOf(state)}>{children ?? state}</Badge>;
}

/** A label set as `name="value"` chips, in the order given. */
export function LabelBadges({ labels, empty = "no labels" }: { labels?: Record<string, string>; empty?: string }) {
  const entries = Object.entries(labels ?? {});
  if (entries.length === 0) return <span class="muted">{empty}</span>;
  return (
    <span class="labels">
      {entries.map(([name, value]) => (
        <span class="label" key={name}>
          <span class="label-name">{name}</span>=<span class="label-value">"{value}"</span>
        </span>
      ))}
    </span>
  );
}
