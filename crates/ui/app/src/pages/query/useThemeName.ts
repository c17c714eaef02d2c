// The page's theme name, re-read when the shell switches it: canvas drawing
// cannot use CSS variables, so charts redraw with the new colours.
import { useEffect, useState } from "preact/hooks";

const read = () => document.documentElement.dataset.theme ?? "";

export function useThemeName(): string {
  const [theme, setTheme] = useState(read);
  useEffect(() => {
    const observer = new MutationObserver(() => setTheme(read()));
    observer.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
    return () => observer.disconnect();
  }, []);
  return theme;
}

/** The current value of a CSS variable of the page. */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
