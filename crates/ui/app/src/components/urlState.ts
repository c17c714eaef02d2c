// Page state kept in the URL's query string (filters, search text), so a
// reload or a shared link shows the same view. Changes replace the history
// entry rather than adding one per keystroke.
import type { Location } from "../router";
import { navigate } from "../router";

/** Sets (or, for "" and [], removes) query parameters of the current page. */
export function setSearchParams(location: Location, changes: Record<string, string | string[] | undefined>): void {
  const search = new URLSearchParams(location.search);
  for (const [key, value] of Object.entries(changes)) {
    search.delete(key);
    if (Array.isArray(value)) value.forEach((v) => search.append(key, v));
    else if (value) search.set(key, value);
  }
  navigate(location.path, search, true);
}

/** Whether `text` contains every word of a search, case-insensitively. */
export function matchesSearch(search: string, ...texts: string[]): boolean {
  const words = search.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const haystack = texts.join("\n").toLowerCase();
  return words.every((w) => haystack.includes(w));
}

/** The text of a label set for searching: `name="value"` lines. */
export function labelsText(labels: Record<string, string> | undefined): string {
  return Object.entries(labels ?? {})
    .map(([k, v]) => `${k}="${v}"`)
    .join("\n");
}
