// Path-based routing under the server's path prefix, so links such as
// `/graph?g0.expr=...` (the generator URL of alerts) open the right page.
import { useEffect, useState } from "preact/hooks";
import { pathPrefix } from "./api";

export interface Location {
  /** The page's path below the prefix, e.g. "/query". */
  path: string;
  search: URLSearchParams;
}

function current(): Location {
  let path = window.location.pathname;
  if (pathPrefix && path.startsWith(pathPrefix)) path = path.slice(pathPrefix.length);
  return { path: path || "/", search: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();
window.addEventListener("popstate", () => listeners.forEach((l) => l()));

/** The href of a page path (with its query string) under the prefix. */
export function href(path: string, search?: URLSearchParams | string): string {
  const query = search ? `${search}` : "";
  return `${pathPrefix}${path}${query ? `?${query}` : ""}`;
}

/** Goes to a page; `replace` rewrites the current history entry (state kept in the URL). */
export function navigate(path: string, search?: URLSearchParams | string, replace = false): void {
  const url = href(path, search);
  if (replace) window.history.replaceState(null, "", url);
  else window.history.pushState(null, "", url);
  listeners.forEach((l) => l());
}

/** The current location; re-renders on navigation. */
export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    listeners.add(update);
    return () => {
      listeners.delete(update);
    };
  }, []);
  return location;
}

/** A link that navigates without reloading the page. */
export function onLinkClick(e: MouseEvent, path: string, search?: URLSearchParams | string): void {
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(path, search);
}
