// How the pages write numbers, bytes, durations and times: one place, so every
// page says "1.2 MiB" or "3m 20s ago" the same way.

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

/** A count with digit grouping: 1234567 → "1,234,567". */
export function formatCount(n: number): string {
  return Number.isFinite(n) ? integer.format(n) : String(n);
}

/** A number with at most two decimals and digit grouping. */
export function formatNumber(n: number): string {
  return Number.isFinite(n) ? decimal.format(n) : String(n);
}

/** A share of a total as a percentage, "12.3%"; "–" when the total is zero. */
export function formatPercent(part: number, total: number): string {
  if (!(total > 0)) return "–";
  const p = (100 * part) / total;
  return `${p >= 10 || p === 0 ? p.toFixed(0) : p.toFixed(1)}%`;
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/** Bytes in binary units: 1536 → "1.5 KiB". */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  let v = Math.abs(bytes);
  let unit = 0;
  while (v >= 1024 && unit < BYTE_UNITS.length - 1) {
    v /= 1024;
    unit++;
  }
  const digits = unit === 0 || v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return `${bytes < 0 ? "-" : ""}${v.toFixed(digits)} ${BYTE_UNITS[unit]}`;
}

const DURATION_UNITS: [string, number][] = [
  ["d", 86400],
  ["h", 3600],
  ["m", 60],
];

/**
 * A duration in seconds for people: "850µs", "12.3ms", "4.25s", "3m 20s",
 * "2d 4h". Sub-second values keep three significant digits; longer ones
 * keep their two largest units.
 */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return String(seconds);
  const sign = seconds < 0 ? "-" : "";
  const s = Math.abs(seconds);
  if (s === 0) return "0s";
  if (s < 1e-3) return `${sign}${+(s * 1e6).toPrecision(3)}µs`;
  if (s < 1) return `${sign}${+(s * 1e3).toPrecision(3)}ms`;
  if (s < 60) return `${sign}${+s.toPrecision(3)}s`;
  const parts: string[] = [];
  let rest = Math.round(s);
  for (const [unit, size] of DURATION_UNITS) {
    const n = Math.floor(rest / size);
    if (n > 0 || parts.length > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  parts.push(`${rest}s`);
  // Drop zero parts at the end ("2h 0m 0s" → "2h") and keep the two largest.
  while (parts.length > 1 && /^0[a-z]+$/.test(parts[parts.length - 1])) parts.pop();
  return sign + parts.slice(0, 2).join(" ");
}

/**
 * A moment relative to now: "12s ago", "in 3m". Prometheus' APIs report the
 * zero time (year 1) for "never", which reads "never".
 */
export function formatRelative(time: string | number | Date, now = Date.now()): string {
  const t = toDate(time);
  if (!t || t.getUTCFullYear() < 1971) return "never";
  const seconds = (now - t.getTime()) / 1000;
  if (Math.abs(seconds) < 1) return "just now";
  // Whole seconds: the page is not re-rendered every millisecond anyway.
  const d = formatDuration(Math.round(Math.abs(seconds)));
  return seconds > 0 ? `${d} ago` : `in ${d}`;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/** A date and time in the browser's zone, "2026-11-28 05:26:17" (sortable, unambiguous). */
export function formatDateTime(time: string | number | Date): string {
  const t = toDate(time);
  if (!t) return String(time);
  return (
    `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())} ` +
    `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}`
  );
}

/** The exact UTC instant, for tooltips. */
export function formatIso(time: string | number | Date): string {
  const t = toDate(time);
  return t ? t.toISOString() : String(time);
}

/** Today's UTC date as YYYY-MM-DD (the `date` the cardinality API takes). */
export function utcDate(offsetDays = 0, from = new Date()): string {
  const t = new Date(from.getTime() + offsetDays * 86400_000);
  return `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
}

/** Dates as RFC 3339 strings or milliseconds since the epoch. */
function toDate(time: string | number | Date): Date | undefined {
  const t = time instanceof Date ? time : new Date(time);
  return Number.isNaN(t.getTime()) ? undefined : t;
}

/**
 * A sample value as the API writes it ("1e+00", "NaN", "+Inf") for reading:
 * plain numbers with up to six significant digits, the special values as they are.
 */
export function formatSampleValue(value: string): string {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) return value;
  return Math.abs(n) >= 1e15 || (n !== 0 && Math.abs(n) < 1e-6) ? n.toExponential(3) : String(+n.toPrecision(6));
}

/** A camelCase API field for people: "maintenanceCpuSeconds" → "Maintenance CPU seconds". */
export function titleOfKey(key: string): string {
  const words = key
    .replace(/_/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .replace(/\b(cpu|wal|id|url|http|api)\b/g, (w) => w.toUpperCase());
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A counter named by an API field, in the unit its name says (…Bytes, …Seconds). */
export function formatByKey(key: string, value: number): string {
  if (/bytes$/i.test(key)) return formatBytes(value);
  if (/seconds$/i.test(key)) return formatDuration(value);
  return formatCount(value);
}
