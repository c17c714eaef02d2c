import type { PageProps } from "../main";

// Placeholder until the page is written.
export function ConfigPage(_props: PageProps) {
  return <p>ConfigPage</p>;
}
