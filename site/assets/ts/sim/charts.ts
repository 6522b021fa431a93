// The widget's charts, in the order the page shows them. A new chart is its
// own file (a PaneChartKind or BlockChartKind, chart.ts), a line here, and
// its strings (ARCHITECTURE.md, "Adding a chart").
import { callsChart } from "./calls";
import { cdfChart } from "./cdf";
import { chainChart } from "./chain";
import type { BlockChartKind, PaneChartKind } from "./chart";
import { summaryChart } from "./summary";
import { timelineChart } from "./timeline";
import { waterfallChart } from "./waterfall";

// In each variant's pane, under its title and settings.
export const PANE_CHARTS: readonly PaneChartKind[] = [chainChart, waterfallChart, timelineChart];

// Once for the block, under the panes.
export const BLOCK_CHARTS: readonly BlockChartKind[] = [cdfChart, summaryChart, callsChart];
