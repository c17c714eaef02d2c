import type { PageProps } from "../main";

// Placeholder until the page is written.
export function StatusPage(_props: PageProps) {
  return <p>StatusPage</p>;
}
