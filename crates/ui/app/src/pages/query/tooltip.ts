// The hover tooltip of the chart: the series nearest to the cursor, its value
// and the time. Plain DOM, updated on every cursor move without re-rendering.
import type uPlot from "uplot";
import { formatLocalTime } from "./duration";
import { seriesColor, type ChartData } from "./chartData";
import { seriesName } from "./format";
import type { Labels } from "./types";

export function tooltipPlugin(data: () => ChartData, metrics: Labels[]): uPlot.Plugin {
  const box = document.createElement("div");
  box.className = "chart-tooltip";
  box.setAttribute("role", "tooltip");
  const time = document.createElement("div");
  time.className = "muted";
  const row = document.createElement("div");
  row.className = "tooltip-series";
  const swatch = document.createElement("span");
  swatch.className = "swatch";
  const value = document.createElement("strong");
  const name = document.createElement("div");
  name.className = "mono tooltip-name";
  row.append(swatch, value);
  box.append(time, row, name);

  return {
    hooks: {
      init: (u) => {
        u.over.appendChild(box);
        box.style.display = "none";
      },
      setCursor: (u) => {
        const idx = u.cursor.idx;
        const top = u.cursor.top ?? -1;
        const left = u.cursor.left ?? -1;
        if (idx == null || left < 0) {
          box.style.display = "none";
          return;
        }
        const { drawn, raw, xs } = data();
        // The visible series whose drawn point is closest to the pointer's height.
        let best = -1;
        let bestDist = Infinity;
        for (let i = 0; i < drawn.length; i++) {
          const v = drawn[i][idx];
          if (v === null || !u.series[i + 1].show) continue;
          const d = Math.abs(u.valToPos(v, "y") - top);
          if (d < bestDist) {
            bestDist = d;
            best = i;
          }
        }
        if (best < 0) {
          box.style.display = "none";
          return;
        }
        time.textContent = formatLocalTime(xs[idx] * 1000);
        swatch.style.background = seriesColor(best);
        value.textContent = String(raw[best][idx]);
        name.textContent = seriesName(metrics[best]);
        box.style.display = "block";
        // Keep the box inside the plot: flip to the left of the cursor past the middle.
        const width = u.over.clientWidth;
        box.style.left = left > width / 2 ? "" : `${left + 12}px`;
        box.style.right = left > width / 2 ? `${width - left + 12}px` : "";
        box.style.top = `${Math.max(0, top + 12)}px`;
      },
    },
  };
}
