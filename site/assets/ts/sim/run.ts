// A widget's runs: starting one over its transport (transport.ts), the
// messages that come back (one switch over their types: the server → client
// table of sim/server/PROTOCOL.md), cancelling it, and what the widget
// draws from while and after it runs: its variants' data, whether it was
// real, the block's checks.
import type { Controls } from "./controls";
import { int, num, t } from "./i18n";
import type { Panes } from "./panes";
import { PHASES } from "./schema.gen";
import type { Schedule } from "./schedule";
import type { Share } from "./share";
import { socket } from "./socket";
import type { Status } from "./status";
import { VariantData } from "./store";
import type { Toolbar } from "./toolbar";
import { transport, type Transport } from "./transport";
import type { BlockData, Check, Incoming, RunMode, RunMsg } from "./types";

let firstResult = false; // a run finished on this page (benchmarks read the mark)
let settleFirst: () => void;
// firstRun settles when a run first finishes on this page (sim.ts builds
// the widgets out of view after it).
export const firstRun = new Promise<void>((r) => (settleFirst = r));

// small reports whether a block is cheap enough to run on its own when the
// page opens: few calls in the build-time results.
export function small(data: BlockData): boolean {
  const vs = data.results?.variants || [];
  let calls = 0;
  for (const v of vs) calls += v.summary?.calls || 0;
  return vs.length > 0 && calls <= 200;
}

// The parts of its widget a run changes.
export interface RunParts {
  fig: HTMLElement;
  data: BlockData;
  controls: Controls;
  panes: Panes;
  status: Status;
  toolbar: Toolbar;
  share: Share;
  schedule: Schedule;
  progress: () => void; // shows the model's loading progress
}

export class Runner {
  real = false; // the current or last run is a real one
  checks: Check[] | null = null; // the block's expectations, as last checked
  private tr: Transport = socket;
  private token = 0; // the latest run asked for
  private runId = "";
  private events = 0;
  private dropped = 0;
  private finishedRun = false; // a run ended; the next drawing completes it
  private auto = false; // the current run was started by the page itself
  private defaults = true; // the run uses the block's own parameters
  private effective: Record<string, Record<string, unknown>> = {}; // each variant's scenario, from "started"

  constructor(private p: RunParts) {}

  get running(): boolean {
    return !!this.runId;
  }

  // idle reports whether no run was started yet or is under way.
  idle(): boolean {
    return this.token === 0 && !this.runId && !this.p.fig.dataset.ready;
  }

  // start starts a run of the block in mode ("model" or "real"). A run the
  // page starts on its own (auto) shows its results but does not set
  // data-ready, which marks the end of a run someone asked for.
  async start(mode: RunMode, auto: boolean, fromLink: boolean): Promise<void> {
    const { fig, data, controls, panes, status } = this.p;
    // A value the page finds wrong (a link's rtt=-5ms, a typo) still goes
    // to the model or the server: their refusal names the key and says why,
    // which the status shows and the control's mark keeps.
    controls.clearMarks();
    if (this.runId) this.cancel(true);
    const token = ++this.token;
    this.mark("run");
    // Synchronously, so that whoever pressed Run sees the last run's marks
    // gone at once.
    this.finishedRun = false;
    this.auto = auto;
    delete fig.dataset.ready;
    delete fig.dataset.events;
    delete fig.dataset.dropped;
    status.set(t("w_connecting"));
    const tr = await transport(mode, data, status, this.p.progress);
    if (token !== this.token || !tr) return; // a later run took over, or none can run
    this.tr = tr;
    this.real = mode === "real";
    const id = tr.newID(data.block);
    const params = controls.params();
    this.defaults = Object.keys(params).length === 0 && controls.seedValue() === undefined;
    const msg: RunMsg = { type: "run", id, lab: data.lab, block: data.block, mode, params };
    const seed = controls.seedValue();
    if (seed !== undefined) msg.seed = seed;
    this.runId = id;
    this.events = 0;
    this.dropped = 0;
    this.checks = null;
    // The request goes first: the page's own work below (new panes, the
    // address) is done while the model or the server computes. Their
    // answers are handled after this function returns.
    this.mark("sent");
    const sent = tr.run(msg, (m) => this.onMessage(m));
    status.clearNotes();
    panes.set(data.variants.map((v) => this.fresh(v.name, v.label, v.settings)));
    panes.started();
    if (!auto && !fromLink) this.p.share.remember();
    if (!sent) {
      this.finish();
      status.set(t("w_lost"), true);
      return;
    }
    fig.dataset.state = "running";
    this.p.toolbar.cancelBtn.hidden = false;
    status.set(this.real ? t("w_running_real") : t("w_running"));
    panes.changed = true;
    this.p.schedule.started();
    this.p.schedule.soon();
  }

  cancel(quiet = false): void {
    if (!this.runId) return;
    this.tr.cancel(this.runId);
    this.tr.forget(this.runId);
    this.finish();
    if (!quiet) this.p.status.set(t("w_cancelled"));
  }

  private finish(): void {
    this.runId = "";
    this.p.toolbar.cancelBtn.hidden = true;
    this.p.fig.dataset.state = "idle";
  }

  // fresh is an empty variant for a run; with the block's own parameters it
  // expects the build-time run's rows (the charts keep their size).
  private fresh(name: string, label: string, settings: Record<string, unknown>): VariantData {
    const { data, controls } = this.p;
    const d = new VariantData(name, label, settings);
    const b = data.results?.variants?.find((x) => x.name === name);
    if (b?.summary && small(data) && Object.keys(controls.params()).length === 0 && controls.seedValue() === undefined) {
      d.expectCalls = b.summary.calls;
      d.expectSocks = b.summary.connects;
    }
    return d;
  }

  private onMessage(m: Incoming): void {
    const { fig, data, panes, status } = this.p;
    if (m.id && m.id !== this.runId) return;
    switch (m.type) {
      case "queued":
        status.set(t("w_queued", { n: m.position ?? "?" }));
        break;
      case "started": {
        this.mark("started");
        this.effective = m.params || {};
        const names = (m.variants || []) as { name: string; label?: string }[];
        if (names.length) {
          const defs = data.variants;
          panes.set(names.map((v) => {
            const def = defs.find((x) => x.name === v.name);
            return this.fresh(v.name, def?.label || v.label || v.name, def?.settings || {}); // the page's label: its language
          }));
        }
        status.set(this.real ? t("w_running_real") : t("w_running"));
        break;
      }
      case "events": {
        const evs = m.events || [];
        panes.add(m.variant, evs);
        this.events += evs.length;
        break;
      }
      case "stats": {
        const d = panes.variant(m.variant);
        if (d && m.summary) d.summary = m.summary;
        panes.changed = true;
        break;
      }
      case "truncated": {
        const d = panes.variant(m.variant);
        if (d) d.truncated = m.sent || 1;
        status.note(t("w_truncated", { variant: d?.label || m.variant || "", n: int(m.sent || 0) }));
        break;
      }
      case "dropped":
        this.dropped += m.count || 0;
        fig.dataset.dropped = String(this.dropped);
        status.note(t("w_dropped", { n: int(m.count || 0) }));
        break;
      case "done": {
        for (const v of m.variants || []) {
          const d = panes.variant(v.name);
          if (!d) continue;
          if (v.summary) d.summary = v.summary;
          d.error = v.error || "";
          d.runtime = v.runtime || null;
          d.checks = v.checks || null;
          d.modelError = v.model_error || "";
          d.model = v.model || null;
          d.compare = v.compare || null;
          d.overhead = v.harness_overhead_ms || 0;
          d.verdict = v.verdict || "";
          d.busyCPUs = v.busy_cpus || 0;
          if (d.truncated && this.defaults && !this.real) {
            // The stream was cut short; with the block's own parameters the
            // build-time run is the same run, so its time series completes it.
            const b = data.results?.variants?.find((x) => x.name === d.name);
            if (b?.series?.length) d.series = b.series;
          }
          panes.done(d);
        }
        this.mark("done");
        this.checks = m.checks || null;
        fig.dataset.events = String(this.events);
        if (!firstResult) {
          firstResult = true;
          settleFirst();
          performance.mark("connlab:first-result");
        }
        this.finishedRun = !this.auto;
        this.finish();
        const elapsed = num(m.elapsed_ms || 0);
        status.set(this.real ? t("w_done_real", { ms: elapsed }) : t("w_done", { events: int(this.events), ms: elapsed }), false, "done");
        panes.changed = true;
        panes.finished();
        this.announce();
        break;
      }
      case "error": {
        const msg = m.message || "";
        if (m.field) this.p.controls.mark(m.field, msg);
        // The key, then why: the model's messages begin with their key.
        const text = (m.field && !msg.includes(m.field + ":") ? m.field + ": " : "") + msg;
        if (m.message === "cancelled") {
          this.finish();
          status.set(t("w_cancelled"));
        } else {
          if (m.id) this.finish();
          status.set(t("w_failed") + " " + text, true, "error");
        }
        break;
      }
      case "lost":
        this.finish();
        status.set(t("w_lost"), true, "error");
        break;
    }
    this.p.schedule.soon();
  }

  // drawn is told that the widget drew: after a run someone asked for,
  // everything of it is on screen now (data-ready; tests wait for it).
  drawn(): void {
    if (!this.finishedRun) return;
    this.finishedRun = false;
    this.p.fig.dataset.ready = "1";
    this.mark("drawn");
  }

  // mark records a step of a run in the page's performance timeline
  // ("connlab:BLOCK:done"), the last of each step only: benchmarks read
  // them.
  private mark(step: string): void {
    const name = "connlab:" + this.p.data.block + ":" + step;
    performance.clearMarks(name);
    performance.mark(name);
  }

  // announce tells the page's figures (figures.ts) what a run gave: the
  // "connlab:result" page event (sim/server/PROTOCOL.md) with each
  // variant's scenario and its first calls' curl times.
  private announce(): void {
    const variants = this.p.panes.variants().map((d) => ({
      name: d.name,
      params: this.effective[d.name] || {},
      summary: d.summary,
      calls: d.calls.slice(0, 16).map((c) => {
        // curl's names for the cumulative times (PHASES order), as events carry them.
        const call: Record<string, number | boolean | string> = { new_conn: c.newConn, handshake: c.handshake, error: c.error };
        PHASES.forEach((ph, i) => {
          if (ph.curl) call[ph.json] = c.t[i];
        });
        call.total_ms = c.total;
        return call;
      }),
    }));
    document.dispatchEvent(new CustomEvent("connlab:result", { detail: { block: this.p.data.block, mode: this.real ? "real" : "model", variants } }));
  }
}
