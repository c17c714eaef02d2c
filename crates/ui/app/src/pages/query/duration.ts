// Prometheus durations ("1h30m", "90m", "2w") and the UTC time format of
// Prometheus' query URLs ("2024-05-01 12:00:00"), without a date library.

const UNITS: [string, number][] = [
  ["y", 365 * 24 * 3600 * 1000],
  ["w", 7 * 24 * 3600 * 1000],
  ["d", 24 * 3600 * 1000],
  ["h", 3600 * 1000],
  ["m", 60 * 1000],
  ["s", 1000],
  ["ms", 1],
];
const UNIT_MS = new Map(UNITS);
const DURATION = /^(?:\d+(?:y|w|d|h|ms|m|s))+$/;
const PART = /(\d+)(y|w|d|h|ms|m|s)/g;

/** Milliseconds of a Prometheus duration, or null if it is not one (or zero). */
export function parseDuration(text: string): number | null {
  const t = text.trim();
  if (!DURATION.test(t)) return null;
  let ms = 0;
  for (const [, n, unit] of t.matchAll(PART)) ms += Number(n) * UNIT_MS.get(unit)!;
  return ms > 0 ? ms : null;
}

/** The shortest Prometheus duration for `ms` ("1h30m"); "0s" for zero. */
export function formatDuration(ms: number): string {
  if (ms <= 0) return "0s";
  let rest = Math.round(ms);
  let out = "";
  for (const [unit, size] of UNITS) {
    // Years and weeks only when they are exact, as Prometheus writes them.
    if ((unit === "y" || unit === "w") && rest % size !== 0) continue;
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out;
}

/**
 * A step typed by the user: a duration ("15s", "1m") or a number of seconds
 * ("15", "0.5"), as Prometheus' step_input. Returns milliseconds or null.
 */
export function parseStep(text: string): number | null {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) {
    const ms = Number(t) * 1000;
    return ms > 0 ? ms : null;
  }
  return parseDuration(t);
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** "YYYY-MM-DD HH:mm:ss" in UTC: the time format of Prometheus' URL parameters. */
export function formatUrlTime(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
  );
}

/** Reads a URL time: "YYYY-MM-DD HH:mm:ss" (UTC), an ISO time, or Unix seconds. */
export function parseUrlTime(text: string): number | null {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t) * 1000;
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(t);
  if (m) {
    const [, y, mo, d, h, mi, s] = m;
    return Date.UTC(+y, +mo - 1, +d, +h, +mi, s ? +s : 0);
  }
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms;
}

/** The value of an `<input type="datetime-local">` for a time (local time, seconds). */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** A local time as the user reads it: "2024-05-01 14:03:07.250" (milliseconds when not zero). */
export function formatLocalTime(ms: number): string {
  const d = new Date(ms);
  const frac = d.getMilliseconds() ? `.${pad(d.getMilliseconds(), 3)}` : "";
  return `${toLocalInput(ms).replace("T", " ")}${frac}`;
}
