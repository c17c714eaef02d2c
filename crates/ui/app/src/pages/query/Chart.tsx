// The uPlot chart of a range query with its own lightweight legend (uPlot's
// is off: it builds a table row per series, too slow for 1,000 series).
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { alignSeries, seriesColor, type ChartData } from "./chartData";
import { formatSI } from "./format";
import { tooltipPlugin } from "./tooltip";
import { timeTicks } from "./timeAxis";
import { cssVar, useThemeName } from "./useThemeName";
import { Legend } from "./Legend";
import type { RangeSeries } from "./types";

interface Props {
  series: RangeSeries[];
  /** The query's grid, unix seconds. */
  start: number;
  end: number;
  step: number;
  stacked: boolean;
  /** performance.now() when the data arrived. */
  receivedAt: number;
  /** A range selected by dragging over the chart, in ms. */
  onZoom: (startMs: number, endMs: number) => void;
  onDrawn: (renderMs: number) => void;
}

/** Mounted once per result (keyed by its arrival), so the series selection starts anew with new data. */
export function Chart({ series, start, end, step, stacked, receivedAt, onZoom, onDrawn }: Props) {
  const container = useRef<HTMLDivElement>(null);
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const builds = useRef(0);
  const theme = useThemeName();
  // null: all shown; otherwise one flag per series.
  const [shown, setShown] = useState<boolean[] | null>(null);
  const callbacks = useRef({ onZoom, onDrawn });
  callbacks.current = { onZoom, onDrawn };

  const data = useMemo<ChartData>(
    () => alignSeries(series, start, end, step, stacked),
    [series, start, end, step, stacked],
  );
  // The legend of a new result is put in the DOM once the chart is drawn: the chart comes first.
  const [legendFor, setLegendFor] = useState<RangeSeries[] | null>(null);

  // A layout effect: the chart is built right after this render, not after a paint.
  useLayoutEffect(() => {
    const el = host.current!;
    const graph = container.current!;
    graph.removeAttribute("data-render-ms");
    // The first chart of a result counts from the data's arrival; a redraw
    // (display mode, theme) from now.
    const since = builds.current++ === 0 ? receivedAt : performance.now();
    let reported = false;
    const axis = {
      stroke: cssVar("--fg-muted"),
      grid: { stroke: cssVar("--border"), width: 1 },
      ticks: { stroke: cssVar("--border"), width: 1 },
    };
    const opts: uPlot.Options = {
      width: el.clientWidth || 800,
      height: window.innerWidth <= 720 ? 260 : 400,
      legend: { show: false },
      cursor: { points: { show: false }, drag: { x: true, y: false, setScale: false } },
      scales: {
        x: { time: true, min: start, max: end },
        // Stacked areas start at zero, or the lowest band would seem to be missing.
        ...(stacked ? { y: { range: (_u: uPlot, min: number, max: number) => stackedRange(min, max) } } : {}),
      },
      axes: [
        { ...axis, space: 70, values: timeTicks },
        { ...axis, size: 56, values: (_u: uPlot, splits: number[]) => splits.map(formatSI) },
      ],
      series: [
        {},
        ...data.drawn.map((_, i) => ({
          stroke: seriesColor(i),
          width: 1,
          points: { show: false },
          fill: stacked ? `${seriesColor(i)}55` : undefined,
          show: shown ? shown[i] : true,
        })),
      ],
      // Stacked: each series fills down to the one below it.
      bands: stacked ? data.drawn.slice(1).map((_, i) => ({ series: [i + 2, i + 1] as [number, number] })) : [],
      plugins: [tooltipPlugin(() => data, series.map((s) => s.metric))],
      hooks: {
        draw: [
          () => {
            if (reported) return;
            reported = true;
            const ms = performance.now() - since;
            graph.setAttribute("data-render-ms", ms.toFixed(1));
            callbacks.current.onDrawn(ms);
            setLegendFor(series);
          },
        ],
        setSelect: [
          (u) => {
            if (u.select.width < 5) return;
            const from = u.posToVal(u.select.left, "x");
            const to = u.posToVal(u.select.left + u.select.width, "x");
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            callbacks.current.onZoom(from * 1000, to * 1000);
          },
        ],
      },
    };
    const u = new uPlot(opts, [data.xs, ...data.drawn] as uPlot.AlignedData, el);
    plot.current = u;
    const resize = new ResizeObserver(() => {
      if (el.clientWidth && el.clientWidth !== u.width) u.setSize({ width: el.clientWidth, height: u.height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
    // Visibility changes are applied below without rebuilding the chart.
  }, [data, theme]);

  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    u.batch(() => {
      for (let i = 1; i < u.series.length; i++) {
        const show = shown ? shown[i - 1] : true;
        if (u.series[i].show !== show) u.setSeries(i, { show });
      }
    });
  }, [shown]);

  const drawnCount = series.length - data.histogramOnly;
  return (
    <div class="graph" data-testid="graph" data-series-count={drawnCount} ref={container}>
      {data.histogramOnly > 0 && (
        <div class="info">
          {data.histogramOnly} series hold native histograms, which are not graphed: graph{" "}
          <code>histogram_quantile()</code>, <code>histogram_count()</code> or <code>histogram_sum()</code> of them.
        </div>
      )}
      <div class="chart" ref={host} />
      {legendFor === series && <Legend metrics={series.map((s) => s.metric)} shown={shown} onChange={setShown} />}
    </div>
  );
}

function stackedRange(min: number, max: number): [number, number] {
  const lo = Math.min(0, min);
  const hi = Math.max(0, max);
  const pad = (hi - lo || Math.abs(hi) || 1) * 0.05;
  return [lo < 0 ? lo - pad : 0, hi > 0 ? hi + pad : 0];
}
