import type { PageProps } from "../main";

// Placeholder until the page is written.
export function RulesPage(_props: PageProps) {
  return <p>RulesPage</p>;
}
