import type { PageProps } from "../main";

// Placeholder until the page is written.
export function TargetsPage(_props: PageProps) {
  return <p>TargetsPage</p>;
}
