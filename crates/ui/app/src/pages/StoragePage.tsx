import type { PageProps } from "../main";

// Placeholder until the page is written.
export function StoragePage(_props: PageProps) {
  return <p>StoragePage</p>;
}
