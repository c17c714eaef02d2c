// Tick labels of the time axis in local time, 24-hour: seconds only when the
// ticks are less than a minute apart, the date under the first tick of each day.
const pad = (n: number) => String(n).padStart(2, "0");

export function timeTicks(_u: unknown, splits: number[], _axis: number, _space: number, incr: number): string[] {
  let lastDay = "";
  return splits.map((s) => {
    const d = new Date(s * 1000);
    const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    if (incr >= 86400) return day;
    const time = `${pad(d.getHours())}:${pad(d.getMinutes())}${incr < 60 ? `:${pad(d.getSeconds())}` : ""}`;
    const newDay = day !== lastDay;
    lastDay = day;
    return newDay ? `${time}\n${day}` : time;
  });
}
