// The widget's charts on the page: the legend of their colours, then the
// variants side by side, a pane each with the charts charts.ts lists for a
// pane, then the block's own charts under them. Panes follows the runs'
// variants and hands each chart the run's events and its drawings.
import { VARIANT, el } from "./canvas";
import type { BlockChart, Frame, PaneChart, Tip } from "./chart";
import { BLOCK_CHARTS, PANE_CHARTS } from "./charts";
import type { VariantData } from "./store";
import type { BlockData, Event } from "./types";

interface Pane { d: VariantData; root: HTMLElement; charts: PaneChart[] }

export class Panes {
  readonly legend = el("div", "sim-legend");
  private panesEl = el("div", "sim-panes");
  private bottomEl = el("div", "sim-bottom");
  private below: HTMLElement[] = [];
  private panes: Pane[] = [];
  private blocks: BlockChart[];
  changed = true; // summaries or checks changed: the next drawing shows them

  constructor(private data: BlockData, private tip: Tip) {
    this.blocks = BLOCK_CHARTS.map((k) => k.make({ data, tip, variants: () => this.variants() }));
    for (const c of this.blocks) {
      if (c.below) this.below.push(...c.nodes);
      else this.bottomEl.append(...c.nodes);
    }
    // Each chart's colours, a line apart.
    const groups = [...PANE_CHARTS, ...BLOCK_CHARTS].map((k) => k.legend?.() || []).filter((g) => g.length);
    groups.forEach((g, i) => {
      if (i) this.legend.append(el("span", "sep"));
      for (const it of g) {
        const s = el("span", "item " + (it.cls || ""));
        const sw = el("i");
        sw.style.background = it.color;
        s.append(sw, it.label);
        this.legend.append(s);
      }
    });
  }

  // nodes are the widget's parts under its toolbar, in the page's order.
  get nodes(): HTMLElement[] {
    return [this.legend, this.panesEl, this.bottomEl, ...this.below];
  }

  variants(): VariantData[] {
    return this.panes.map((p) => p.d);
  }

  variant(name?: string): VariantData | undefined {
    return this.panes.find((p) => p.d.name === name)?.d;
  }

  // set shows vs side by side. The same variants as shown keep their
  // charts (new canvases cost a style recalculation each); others get new.
  set(vs: VariantData[]): void {
    if (vs.length === this.panes.length && vs.every((d, k) => d.name === this.panes[k].d.name && d.label === this.panes[k].d.label)) {
      vs.forEach((d, k) => {
        this.panes[k].d = d;
        for (const c of this.panes[k].charts) c.reset?.(); // a new run's calls, not the last one's too
      });
      return;
    }
    this.panes = vs.map((d, k) => {
      const root = el("section", "sim-pane");
      root.dataset.variant = d.name;
      const h = el("h4", "sim-pane-title");
      const sw = el("i", "swatch");
      sw.style.background = VARIANT[k % VARIANT.length];
      h.append(sw, d.label);
      root.append(h);
      const chips = el("p", "sim-chips");
      for (const [key, v] of Object.entries(d.settings || {})) chips.append(el("code", "", key + " = " + (typeof v === "string" ? v : JSON.stringify(v))));
      root.append(chips); // even empty: panes line up on a subgrid
      const charts: PaneChart[] = [];
      for (const kind of PANE_CHARTS) {
        const c = kind.make({ data: this.data, variant: d, tip: this.tip });
        if (!c) continue;
        root.append(...c.nodes);
        charts.push(c);
      }
      // A row of the panes' grid per child (sim.css), however many charts.
      root.style.setProperty("--rows", String(root.childElementCount));
      return { d, root, charts };
    });
    this.panesEl.replaceChildren(...this.panes.map((p) => p.root));
    this.panesEl.style.setProperty("--cols", String(Math.min(vs.length, 4)));
    this.panesEl.dataset.count = String(vs.length);
    // Beside the CDF, the summary has room for two variants' columns; with
    // more it goes below it, at the widget's full width (sim.css).
    this.bottomEl.dataset.count = String(vs.length);
  }

  // add gives the variant named name, and its pane's charts, a run's events.
  add(name: string | undefined, evs: Event[]): void {
    const p = this.panes.find((p) => p.d.name === name);
    if (!p) return;
    for (let i = 0; i < evs.length; i++) p.d.add(evs[i]);
    for (const c of p.charts) if (c.add) for (let i = 0; i < evs.length; i++) c.add(evs[i]);
  }

  // started tells the block's charts that a run began.
  started(): void {
    for (const c of this.blocks) c.started?.();
  }

  // done tells d's charts that its run ended; finished, the block's charts,
  // once every variant is done.
  done(d: VariantData): void {
    for (const c of this.panes.find((p) => p.d === d)?.charts || []) c.done?.(d);
  }

  finished(): void {
    for (const c of this.blocks) c.done?.();
  }

  // draw draws every chart.
  draw(f: Omit<Frame, "vs" | "changed">): void {
    const frame: Frame = { ...f, vs: this.variants(), changed: this.changed };
    this.changed = false;
    for (const p of this.panes) for (const c of p.charts) c.render(p.d, frame);
    for (const c of this.blocks) c.render(frame);
  }
}
