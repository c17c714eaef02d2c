// Past queries, kept in the browser for the editor's completion.
const KEY = "cairn.query.history";
const MAX = 100;

export function loadHistory(): string[] {
  try {
    const value: unknown = JSON.parse(localStorage.getItem(KEY) ?? "[]");
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  } catch {
    return [];
  }
}

/** Puts a query first in the history (once). */
export function rememberQuery(expr: string): void {
  const e = expr.trim();
  if (!e) return;
  const list = [e, ...loadHistory().filter((q) => q !== e)].slice(0, MAX);
  try {
    localStorage.setItem(KEY, JSON.stringify(list));
  } catch {
    // Storage full or disabled: history is a convenience only.
  }
}
