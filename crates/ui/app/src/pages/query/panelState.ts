// A query panel's settings and their encoding in the URL, compatible with
// Prometheus' `g<i>.*` parameters so shared links and alert generator URLs work.
import { formatDuration, formatUrlTime, parseDuration, parseStep, parseUrlTime } from "./duration";

export type Tab = "table" | "graph";
export type DisplayMode = "lines" | "stacked";

export interface PanelState {
  /** Stable identity for rendering; not in the URL. */
  id: number;
  expr: string;
  tab: Tab;
  /** Graph range in ms. */
  range: number;
  /** Graph end time in ms; null = now. */
  end: number | null;
  /** Table evaluation time in ms; null = now. */
  moment: number | null;
  /** Graph step in ms; null = automatic from the chart width. */
  step: number | null;
  displayMode: DisplayMode;
}

let nextId = 1;

export function newPanel(from: Partial<PanelState> = {}): PanelState {
  return {
    expr: "",
    tab: "table",
    range: 3600 * 1000,
    end: null,
    moment: null,
    step: null,
    displayMode: "lines",
    ...from,
    id: nextId++,
  };
}

/** The panels of a URL query string; none when it has no `g0.expr`. */
export function decodePanels(search: URLSearchParams): PanelState[] {
  const panels: PanelState[] = [];
  for (let i = 0; search.has(`g${i}.expr`); i++) {
    const get = (key: string) => search.get(`g${i}.${key}`);
    const p = newPanel({ expr: get("expr") ?? "" });
    const tab = get("tab");
    if (tab === "0" || tab === "graph") p.tab = "graph";
    else if (tab === "1" || tab === "table") p.tab = "table";
    const range = get("range_input");
    if (range) p.range = parseDuration(range) ?? p.range;
    const end = get("end_input");
    const moment = get("moment_input");
    if (end) p.end = parseUrlTime(end);
    if (moment) p.moment = parseUrlTime(moment);
    // Prometheus 3 writes one time for both tabs.
    if (p.end === null && p.moment !== null) p.end = p.moment;
    if (p.moment === null && p.end !== null) p.moment = p.end;
    const step = get("step_input");
    if (step) p.step = parseStep(step);
    const mode = get("display_mode");
    if (mode === "stacked" || mode === "lines") p.displayMode = mode;
    else if (get("stacked") === "1") p.displayMode = "stacked";
    panels.push(p);
  }
  return panels;
}

/** The URL query string of the panels (only what differs from "now"/"auto" is written for times and step). */
export function encodePanels(panels: PanelState[]): URLSearchParams {
  const out = new URLSearchParams();
  panels.forEach((p, i) => {
    const set = (key: string, value: string) => out.set(`g${i}.${key}`, value);
    set("expr", p.expr);
    set("tab", p.tab);
    set("display_mode", p.displayMode);
    set("range_input", formatDuration(p.range));
    if (p.end !== null) set("end_input", formatUrlTime(p.end));
    if (p.moment !== null) set("moment_input", formatUrlTime(p.moment));
    if (p.step !== null) set("step_input", String(p.step / 1000));
  });
  return out;
}
