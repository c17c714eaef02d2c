import type { PageProps } from "../main";

// Placeholder until the page is written.
export function AlertsPage(_props: PageProps) {
  return <p>AlertsPage</p>;
}
