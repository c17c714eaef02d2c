import type { PageProps } from "../../main";

// Placeholder until the page is written.
export function QueryPage(_props: PageProps) {
  return <p>Query</p>;
}
