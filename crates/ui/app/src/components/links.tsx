// Links between pages: always under the path prefix, and without a reload.
import type { ComponentChildren } from "preact";
import { href, onLinkClick } from "../router";

/** A link to a page of this UI (`path` below the prefix, e.g. "/rules"). */
export function PageLink({
  path,
  search,
  children,
  title,
  class: className,
}: {
  path: string;
  search?: URLSearchParams | string;
  children: ComponentChildren;
  title?: string;
  class?: string;
}) {
  return (
    <a class={className} title={title} href={href(path, search)} onClick={(e) => onLinkClick(e as MouseEvent, path, search)}>
      {children}
    </a>
  );
}

/** The query page's URL state for one expression in its first panel. */
export function querySearch(expr: string, tab: "table" | "graph" = "table"): URLSearchParams {
  return new URLSearchParams({ "g0.expr": expr, "g0.tab": tab });
}

/** A link that opens an expression on the query page. */
export function QueryLink({
  expr,
  tab = "table",
  children,
  title,
  class: className,
}: {
  expr: string;
  tab?: "table" | "graph";
  children?: ComponentChildren;
  title?: string;
  class?: string;
}) {
  return (
    <PageLink path="/query" search={querySearch(expr, tab)} title={title ?? `Query ${expr}`} class={className}>
      {children ?? expr}
    </PageLink>
  );
}
