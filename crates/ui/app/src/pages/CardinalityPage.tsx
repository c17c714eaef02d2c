import type { PageProps } from "../main";

// Placeholder until the page is written.
export function CardinalityPage(_props: PageProps) {
  return <p>CardinalityPage</p>;
}
