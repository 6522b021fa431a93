// What a chart of the widget is, to the widget: something it makes from the
// block's data, puts on the page and redraws at each drawing. The charts
// themselves are listed in charts.ts; each chart's file says how it is made
// (a PaneChartKind or a BlockChartKind beside its class).
import type { VariantData } from "./store";
import type { BlockData, Check, Event } from "./types";

// A Tip shows html beside the pointer of e, or hides the tooltip (null).
export type Tip = (html: string | null, e?: MouseEvent) => void;

// A Frame is what every chart draws from at one drawing.
export interface Frame {
  vs: VariantData[]; // every variant, in the panes' order
  aligned: boolean; // the reader's Align box: calls drawn from their own start
  real: boolean; // the last run was a real one: measurements beside the model
  checks: Check[] | null; // the block's expectations, as the last run found them
  changed: boolean; // summaries or checks changed since the last drawing
}

// A LegendItem is a colour the charts use and what it means; cls "hatch"
// draws it hatched.
export interface LegendItem { color: string; label: string; cls?: string }

// A PaneChart is drawn once per variant, in the variant's pane.
export interface PaneChart {
  nodes: HTMLElement[]; // appended to the pane in this order (panes share rows: sim.css)
  render(d: VariantData, f: Frame): void;
  reset?(): void; // a new run of the same variant begins: forget the last one's
  add?(e: Event): void; // one event of the run, as it streams in
  done?(d: VariantData): void; // the run ended: d holds its final summary
}

export interface PaneContext { data: BlockData; variant: VariantData; tip: Tip }

export interface PaneChartKind {
  make(c: PaneContext): PaneChart | null; // null: not for this variant
  legend?(): LegendItem[];
}

// A BlockChart is drawn once for the block, over every variant: in the row
// under the panes, or, below, under that row at the widget's full width.
export interface BlockChart {
  nodes: HTMLElement[];
  below?: boolean;
  render(f: Frame): void;
  started?(): void; // a run began: what showed the last run goes
  done?(): void; // the run ended
}

export interface BlockContext { data: BlockData; tip: Tip; variants: () => VariantData[] }

export interface BlockChartKind {
  make(c: BlockContext): BlockChart;
  legend?(): LegendItem[];
}
