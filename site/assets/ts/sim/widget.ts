// One ```sim block's widget: controls, Run (model) and Run real (loopback
// harness), and per variant, side by side, a waterfall and a connection
// timeline; below, the call-time distribution, the summary table and the
// expectations. Events stream in over the page's WebSocket, or, on a static
// host, from the model in the page (model/client.ts), in the same messages,
// and are drawn at most once per animation frame.
//
// With sim serve, model runs go to the server: the socket is open anyway
// (Run real and class mode need it), the page downloads no .wasm, and the
// server reads the lab files afresh, so an author's edit shows at the next
// run without a rebuild. The model in the page is for hosts without one.
//
// Widget only puts its parts together and answers the page (sim.ts):
//   toolbar.ts   the controls, buttons and status line (status.ts)
//   share.ts     the command line and the link of the block's state
//   run.ts       a run: its start, its messages, its end (transport.ts)
//   panes.ts     the charts (charts.ts lists them; chart.ts says what one is)
//   schedule.ts  when the charts are drawn
//   tooltip.ts   the tooltip the charts share
import { model } from "../model/client";
import { Controls } from "./controls";
import type { LinkState } from "./link";
import { Panes } from "./panes";
import { Runner, small } from "./run";
import { Schedule } from "./schedule";
import { Share } from "./share";
import { Status } from "./status";
import { VariantData } from "./store";
import { Toolbar } from "./toolbar";
import { Tooltip } from "./tooltip";
import { t } from "./i18n";
import type { BlockData, RunMode } from "./types";

export { firstRun } from "./run";

export class Widget {
  readonly block: string;
  linked = false; // opened from a link: run when the page can
  private controls: Controls;
  private status = new Status();
  private share: Share;
  private toolbar: Toolbar;
  private tooltip: Tooltip;
  private panes: Panes;
  private schedule: Schedule;
  private runner: Runner;

  constructor(private fig: HTMLElement, private data: BlockData) {
    this.block = data.block;
    this.controls = new Controls(data.controls, "sim-" + data.block, () => this.share.update());
    this.share = new Share(fig, data, this.controls);
    this.toolbar = new Toolbar(data, this.controls, this.share, this.status, {
      run: (mode) => void this.run(mode),
      cancel: () => this.runner.cancel(),
      align: () => this.schedule.soon(),
    });
    this.tooltip = new Tooltip(fig);
    this.panes = new Panes(data, this.tooltip.show);
    this.schedule = new Schedule(() => this.draw(), () => this.runner.running);
    this.runner = new Runner({
      fig, data, controls: this.controls, panes: this.panes, status: this.status, toolbar: this.toolbar,
      share: this.share, schedule: this.schedule, progress: () => this.modelStatus(),
    });
    this.build();
    this.fromBuild();
  }

  // build puts the widget's parts into the block's figure, after its
  // caption, in place of the build-time results.
  private build(): void {
    const f = this.fig;
    f.classList.add("live");
    f.querySelector(".sim-static")?.remove();
    const src = f.querySelector<HTMLDetailsElement>(".sim-source");
    if (src) src.open = false;
    f.querySelector(".sim-source .sim-cmd")?.remove();
    const cap = f.querySelector("figcaption");
    const after = cap ? cap.nextSibling : f.firstChild;
    for (const n of [this.toolbar.root, ...this.panes.nodes, this.tooltip.root]) f.insertBefore(n, after);
    this.share.update();
  }

  // fromBuild shows the results computed when the site was built.
  private fromBuild(): void {
    const built = this.data.results?.variants || [];
    const vs = this.data.variants.map((v) => {
      const d = new VariantData(v.name, v.label, v.settings);
      const b = built.find((x) => x.name === v.name);
      if (b) {
        d.summary = b.summary || null;
        d.error = b.error || "";
        d.series = b.series && b.series.length ? b.series : null;
        if (b.summary && b.summary.calls > 0) d.addMedian(b.summary);
        if (b.summary && this.small()) {
          d.expectCalls = b.summary.calls;
          d.expectSocks = b.summary.connects;
        }
      }
      return d;
    });
    this.runner.checks = this.data.results?.checks || null;
    this.panes.set(vs);
    this.status.set(built.length ? t("w_buildtime") : "");
    this.panes.changed = true;
    this.schedule.soon();
  }

  private draw(): void {
    const aligned = this.toolbar.aligned(this.panes.variants());
    this.panes.draw({ aligned, real: this.runner.real, checks: this.runner.checks });
    this.runner.drawn();
  }

  get element(): HTMLElement {
    return this.fig;
  }

  // lab is the block's page; dataURL, where the page's lab is as data (the
  // English file's, which runs read).
  get lab(): string {
    return this.data.lab;
  }

  get dataURL(): string {
    return this.data.data;
  }

  // small reports whether the block is cheap enough to run on its own when
  // the page opens: few calls in the build-time results.
  small(): boolean {
    return small(this.data);
  }

  // idle reports whether no run was started yet or is under way.
  idle(): boolean {
    return this.runner.idle();
  }

  // noServer shows that no server answered: on a static host the model
  // runs in the page, and Run real says what it needs.
  noServer(): void {
    this.toolbar.noServer();
    if (this.runner.running) return;
    if (model.available() && model.state !== "failed") this.modelStatus();
    else this.status.set(t("w_noserver"), false, "noserver");
  }

  // modelStatus shows how far the model in the page has loaded, while no
  // run says more.
  modelStatus(): void {
    this.status.model(this.runner.running);
  }

  // restore sets the controls from a link's state; the page runs it.
  restore(st: LinkState): void {
    this.controls.reset();
    this.controls.set(st.params);
    this.controls.setSeed(st.seed);
    this.share.update();
    this.linked = true;
  }

  setParams(p: Record<string, unknown>): void {
    this.controls.set(p || {});
    this.share.update();
  }

  // run starts a run of the block in mode ("model" or "real"); auto: the
  // page started it on its own; fromLink: a link's state, already in the
  // address (run.ts).
  async run(mode: RunMode, auto = false, fromLink = false): Promise<void> {
    this.linked = false;
    return this.runner.start(mode, auto, fromLink);
  }

  // link is an address that opens this page with the block's state and
  // runs it.
  link(): string {
    return this.share.link();
  }
}
