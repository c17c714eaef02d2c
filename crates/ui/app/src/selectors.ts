// Series selectors written from names the pages show (a metric, a label pair),
// in PromQL's syntax: names outside the classic character set are quoted,
// as Prometheus 3 allows (`{"my.metric", "a.b"="c"}`).

const CLASSIC_METRIC = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const CLASSIC_LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A PromQL string literal. */
export function quote(value: string): string {
  return JSON.stringify(value);
}

/** A label name as PromQL needs it written (quoted unless classic). */
export function labelName(name: string): string {
  return CLASSIC_LABEL.test(name) ? name : quote(name);
}

export type MatchOp = "=" | "!=" | "=~" | "!~";

/** A matcher `name="value"` (the name quoted when it must be). */
export function equalMatcher(name: string, value: string, op: MatchOp = "="): string {
  return `${labelName(name)}${op}${quote(value)}`;
}

/** The selector of every series of a metric. */
export function metricSelector(metric: string): string {
  return CLASSIC_METRIC.test(metric) ? metric : `{${quote(metric)}}`;
}

/** The selector of one label pair; `__name__` gives the metric's own selector. */
export function pairSelector(name: string, value: string): string {
  return name === "__name__" ? metricSelector(value) : `{${equalMatcher(name, value)}}`;
}

/**
 * Splits a label pair as the cardinality API names it ("job=node"): the name
 * ends at the first "=", as label names cannot contain one.
 */
export function splitPair(pair: string): [string, string] {
  const i = pair.indexOf("=");
  return i < 0 ? [pair, ""] : [pair.slice(0, i), pair.slice(i + 1)];
}

// A matcher inside braces: a name (plain or quoted), an operator, a string.
const STRING = String.raw`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`";
const MATCHER = new RegExp(String.raw`\s*([a-zA-Z_][a-zA-Z0-9_]*|"(?:[^"\\]|\\.)*")\s*(=~|!~|!=|=)\s*(${STRING})\s*`, "y");

interface Matcher {
  name: string;
  text: string;
}

/** The matchers of `metric{...}`, `{...}` or `metric`; undefined for anything else. */
function parseSelector(selector: string): Matcher[] | undefined {
  const s = selector.trim();
  if (s === "") return [];
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(?:\{(.*)\})?$/s.exec(s);
  if (!m || (m[1] === undefined && m[2] === undefined)) return undefined;
  const matchers: Matcher[] = [];
  if (m[1] !== undefined) matchers.push({ name: "__name__", text: equalMatcher("__name__", m[1]) });
  const body = m[2] ?? "";
  let at = 0;
  while (at < body.length) {
    MATCHER.lastIndex = at;
    const found = MATCHER.exec(body);
    if (!found) {
      // A bare quoted metric name: {"my.metric"}.
      const bare = /\s*("(?:[^"\\]|\\.)*")\s*/y;
      bare.lastIndex = at;
      const name = bare.exec(body);
      if (!name) return undefined;
      matchers.push({ name: "__name__", text: `__name__=${name[1]}` });
      at = bare.lastIndex;
    } else {
      const name = found[1].startsWith('"') ? (JSON.parse(found[1]) as string) : found[1];
      matchers.push({ name, text: `${found[1]}${found[2]}${found[3]}` });
      at = MATCHER.lastIndex;
    }
    if (body[at] === ",") at++;
    else if (at < body.length) return undefined;
  }
  return matchers;
}

/**
 * Narrows a selector by `name<op>"value"`, replacing any matcher of the same
 * label (a drill-down); a selector this cannot read is replaced whole.
 */
export function narrowSelector(selector: string, name: string, value: string, op: MatchOp = "="): string {
  const matchers = parseSelector(selector);
  const kept = (matchers ?? []).filter((m) => m.name !== name);
  if (kept.length === 0) return op === "=" ? pairSelector(name, value) : `{${equalMatcher(name, value, op)}}`;
  const added = { name, text: equalMatcher(name, value, op) };
  // The metric name first, as people write it.
  const all = name === "__name__" ? [added, ...kept] : [...kept, added];
  const metric = all[0].name === "__name__" ? /^__name__="((?:[^"\\]|\\.)*)"$/.exec(all[0].text) : null;
  if (metric) {
    const metricName = JSON.parse(`"${metric[1]}"`) as string;
    if (CLASSIC_METRIC.test(metricName)) {
      const rest = all.slice(1).map((m) => m.text);
      return rest.length ? `${metricName}{${rest.join(", ")}}` : metricName;
    }
  }
  return `{${all.map((m) => m.text).join(", ")}}`;
}
