import type { PageProps } from "../main";

// Placeholder until the page is written.
export function IngestionPage(_props: PageProps) {
  return <p>IngestionPage</p>;
}
