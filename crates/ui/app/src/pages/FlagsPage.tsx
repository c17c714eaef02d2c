import type { PageProps } from "../main";

// Placeholder until the page is written.
export function FlagsPage(_props: PageProps) {
  return <p>FlagsPage</p>;
}
