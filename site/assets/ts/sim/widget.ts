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
import { CDF } from "./cdf";
import { ChainView, chainOf } from "./chain";
import { ERROR, VARIANT, el } from "./canvas";
import { Controls } from "./controls";
import { shellQuote } from "./helpers";
import { t, int, num, ms } from "./i18n";
import { host, model } from "../model/client";
import { blockQuery, withBlock } from "./link";
import type { LinkState } from "./link";
import { PHASES } from "./schema.gen";
import { socket } from "./socket";
import { VariantData } from "./store";
import { SOCK, Timeline } from "./timeline";
import type { BlockData, Check, DoneVariant, PhaseRow, ServerMsg } from "./types";
import { renderChecks, renderSummary } from "./summary";
import { Waterfall } from "./waterfall";

const TABLE_ROWS = 500; // calls listed per variant in the table

// The phases curl reports (time_namelookup …): the calls table's columns.
const CURL = PHASES.flatMap((p, i) => (p.curl ? [i] : []));

// A Transport carries run messages: the server's socket or the model in
// the page.
interface Transport {
  newID(block: string): string;
  run(msg: Record<string, unknown> & { id: string }, h: (m: ServerMsg) => void): boolean;
  cancel(id: string): void;
  forget(id: string): void;
}

let firstResult = false; // a run finished on this page (benchmarks read the mark)
let settleFirst: () => void;
// firstRun settles when a run first finishes on this page (sim.ts builds
// the widgets out of view after it).
export const firstRun = new Promise<void>((r) => (settleFirst = r));

interface Pane { d: VariantData; wf: Waterfall; tl: Timeline; root: HTMLElement; chain?: ChainView }

export class Widget {
  readonly block: string;
  private data: BlockData;
  private controls: Controls;
  private status = el("div", "sim-status");
  private notes = el("ul", "sim-notes");
  private panesEl = el("div", "sim-panes");
  private bottomEl = el("div", "sim-bottom");
  private panes: Pane[] = [];
  private cdf: CDF;
  private summaryEl = el("div", "sim-summary");
  private checksEl = el("div", "sim-checks-box");
  private callsEl = el("details", "sim-calls");
  private tipEl = el("div", "sim-tooltip");
  private runBtn = el("button", "sim-run", t("w_run"));
  private realBtn = el("button", "sim-run-real", t("w_run_real"));
  private cancelBtn = el("button", "sim-cancel", t("w_cancel"));
  private copyBtn = el("button", "sim-copy", t("w_copy"));
  private linkBtn = el("button", "sim-copy-link", t("w_copy_link"));
  private realNote = el("p", "sim-real-note");
  private tr: Transport = socket;
  private token = 0; // the latest run asked for
  linked = false; // opened from a link: run when the page can
  private align = el("input");
  private cmdEl: HTMLElement;
  private runId = "";
  private mode = "model";
  private real = false;
  private checks: Check[] | null = null;
  private queued = false;
  private frame = 0;
  private lastDraw = 0;
  private drawCost = 0;
  private summaryDirty = true;
  private events = 0;
  private dropped = 0;
  private callsStale = true; // the calls table does not show the last run yet
  private finishedRun = false; // a run ended; the next drawing completes it
  private auto = false; // the current run was started by the page itself
  private alignSet = false; // the reader chose; until then, many rows align
  private defaults = true; // the run uses the block's own parameters
  private effective: Record<string, Record<string, unknown>> = {}; // each variant's scenario, from "started"

  constructor(private fig: HTMLElement, data: BlockData) {
    this.data = data;
    this.block = data.block;
    const uid = "sim-" + data.block;
    this.controls = new Controls(data.controls, uid, () => this.updateCommand());
    this.cdf = new CDF((h, e) => this.tip(h, e));
    this.cmdEl = el("code", "sim-cmd-text");
    this.build();
    this.fromBuild();
  }

  private build(): void {
    const f = this.fig;
    f.classList.add("live");
    f.querySelector(".sim-static")?.remove();
    const src = f.querySelector<HTMLDetailsElement>(".sim-source");
    if (src) src.open = false;
    f.querySelector(".sim-source .sim-cmd")?.remove();

    const toolbar = el("div", "sim-toolbar");
    if (this.controls.fields.length) {
      toolbar.append(el("p", "sim-section", t("w_params")), this.controls.root);
    }
    const fixed = Object.entries(this.data.fixed || {});
    if (fixed.length) {
      const p = el("p", "sim-fixed", t("w_fixed") + ": ");
      for (const [k, v] of fixed) p.append(el("code", "", k + " = " + JSON.stringify(v)), " ");
      toolbar.append(p);
    }
    const actions = el("div", "sim-actions");
    this.runBtn.type = this.realBtn.type = this.cancelBtn.type = this.copyBtn.type = this.linkBtn.type = "button";
    this.runBtn.title = t("w_run_title");
    this.realBtn.title = t("w_run_real_title");
    this.cancelBtn.hidden = true;
    const reset = el("button", "sim-reset", t("w_reset"));
    reset.type = "button";
    this.runBtn.addEventListener("click", () => this.run("model"));
    this.realBtn.addEventListener("click", () => this.run("real"));
    this.cancelBtn.addEventListener("click", () => this.cancel());
    reset.addEventListener("click", () => {
      this.controls.reset();
      this.updateCommand();
    });
    this.copyBtn.addEventListener("click", () => this.copy());
    this.linkBtn.addEventListener("click", () => this.copyLink());
    this.linkBtn.title = t("w_copy_link_title");
    const alignLabel = el("label", "sim-align");
    this.align.type = "checkbox";
    this.align.addEventListener("change", () => {
      this.alignSet = true;
      this.schedule();
    });
    alignLabel.append(this.align, " " + t("w_align"));
    actions.append(this.runBtn, this.realBtn, this.cancelBtn, reset, this.copyBtn, this.linkBtn, alignLabel);
    toolbar.append(actions);
    this.realNote.hidden = true;
    toolbar.append(this.realNote);
    const cmd = el("p", "sim-cmd");
    cmd.append(this.cmdEl);
    toolbar.append(cmd);
    this.status.setAttribute("role", "status");
    this.status.setAttribute("aria-live", "polite");
    toolbar.append(this.status, this.notes);

    const legend = el("div", "sim-legend");
    const item = (color: string, text: string, cls = "") => {
      const s = el("span", "item " + cls);
      const i = el("i");
      i.style.background = color;
      s.append(i, text);
      legend.append(s);
    };
    for (const p of PHASES) item(p.color, t(p.label));
    item(ERROR, t("w_error_calls"));
    legend.append(el("span", "sep"));
    item(SOCK.busy, t("st_busy"));
    item(SOCK.idle, t("st_idle"));
    item(SOCK.client, t("st_close_client"));
    item(SOCK.server, t("st_close_server"));
    item(SOCK.tw, t("st_time_wait"), "hatch");
    item(SOCK.twServer, t("st_time_wait_server"), "hatch");
    item(SOCK.portError, t("st_port_error"));

    const cdfBox = el("div", "sim-box");
    cdfBox.append(el("p", "sim-section", t("w_latency")), this.cdf.root);
    const sumBox = el("div", "sim-box");
    sumBox.append(el("p", "sim-section", t("w_summary")), this.summaryEl, this.checksEl);
    this.bottomEl.append(cdfBox, sumBox);
    this.callsEl.append(el("summary", "", t("w_calls_table")));
    // The table is built when opened: thousands of rows are costly DOM.
    this.callsEl.addEventListener("toggle", () => {
      if (this.callsEl.open && this.callsStale) this.renderCalls();
    });
    this.tipEl.hidden = true;
    this.tipEl.setAttribute("role", "tooltip");

    const cap = f.querySelector("figcaption");
    const after = cap ? cap.nextSibling : f.firstChild;
    for (const n of [toolbar, legend, this.panesEl, this.bottomEl, this.callsEl, this.tipEl]) f.insertBefore(n, after);
    this.updateCommand();
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
    this.checks = this.data.results?.checks || null;
    this.setPanes(vs);
    this.setStatus(built.length ? t("w_buildtime") : "");
    this.summaryDirty = true;
    this.schedule();
  }

  // setPanes shows vs side by side. The same variants as shown keep their
  // charts (new canvases cost a style recalculation each); others get new.
  private setPanes(vs: VariantData[]): void {
    if (vs.length === this.panes.length && vs.every((d, k) => d.name === this.panes[k].d.name && d.label === this.panes[k].d.label)) {
      vs.forEach((d, k) => {
        this.panes[k].d = d;
        this.panes[k].chain?.reset(); // a new run's calls, not the last one's too
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
      const wf = new Waterfall((html, e) => this.tip(html, e));
      const tl = new Timeline((html, e) => this.tip(html, e), this.data.port_count);
      const tiers = chainOf(this.data.results?.variants?.find((x) => x.name === d.name)?.summary);
      const chain = tiers ? new ChainView(tiers) : undefined;
      if (chain) root.append(chain.root);
      root.append(el("p", "sim-sub", t("w_waterfall")), wf.root, el("p", "sim-sub", t("w_connections")), tl.root);
      return { d, wf, tl, root, chain };
    });
    this.panesEl.replaceChildren(...this.panes.map((p) => p.root));
    this.panesEl.style.setProperty("--cols", String(Math.min(vs.length, 4)));
    this.panesEl.dataset.count = String(vs.length);
    // Beside the CDF, the summary has room for two variants' columns; with
    // more it goes below it, at the widget's full width (sim.css).
    this.bottomEl.dataset.count = String(vs.length);
  }

  // fresh is an empty variant for a run; with the block's own parameters it
  // expects the build-time run's rows (the charts keep their size).
  private fresh(name: string, label: string, settings: Record<string, unknown>): VariantData {
    const d = new VariantData(name, label, settings);
    const b = this.data.results?.variants?.find((x) => x.name === name);
    if (b?.summary && this.small() && Object.keys(this.controls.params()).length === 0 && this.controls.seedValue() === undefined) {
      d.expectCalls = b.summary.calls;
      d.expectSocks = b.summary.connects;
    }
    return d;
  }

  private variant(name?: string): VariantData | undefined {
    return this.panes.find((p) => p.d.name === name)?.d;
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
    const vs = this.data.results?.variants || [];
    let calls = 0;
    for (const v of vs) calls += v.summary?.calls || 0;
    return vs.length > 0 && calls <= 200;
  }

  // idle reports whether no run was started yet or is under way.
  idle(): boolean {
    return this.token === 0 && !this.runId && !this.fig.dataset.ready;
  }

  // noServer shows that no server answered: on a static host the model
  // runs in the page, and Run real says what it needs.
  noServer(): void {
    this.realBtn.hidden = true;
    this.realNote.replaceChildren(t("w_real_needs_server") + " ", el("code", "", "make serve"));
    this.realNote.hidden = false;
    if (this.runId) return;
    if (model.available() && model.state !== "failed") this.modelStatus();
    else this.setStatus(t("w_noserver"), false, "noserver");
  }

  // modelStatus shows how far the model in the page has loaded, while no
  // run says more.
  modelStatus(): void {
    if (this.runId || !["static", "loading", "noserver", ""].includes(this.status.dataset.state || "")) return;
    switch (model.state) {
      case "ready":
        this.setStatus(t("w_model_ready"), false, "static");
        break;
      case "failed":
        this.setStatus(t("w_noserver"), false, "noserver");
        break;
      case "loading": {
        const pct = model.total ? Math.min(99, Math.floor((100 * model.loaded) / model.total)) : 0;
        this.setStatus(t("w_model_loading", { pct }), false, "loading");
        const bar = el("progress", "sim-progress");
        bar.max = 100;
        bar.value = pct;
        this.status.append(" ", bar);
        break;
      }
      default:
        this.setStatus(t("w_static"), false, "static");
    }
  }

  // restore sets the controls from a link's state; the page runs it.
  restore(st: LinkState): void {
    this.controls.reset();
    this.controls.set(st.params);
    this.controls.setSeed(st.seed);
    this.updateCommand();
    this.linked = true;
  }

  // transport is where a run goes: the server when one answers, else the
  // model in the page (loaded now if it is not yet); null, with the reason
  // shown, when neither can run it.
  private async transport(mode: string): Promise<Transport | null> {
    const h = await host();
    if (h.server && (await socket.connect())) return socket;
    if (mode === "real") {
      this.setStatus(t("w_real_needs_server") + " make serve", true, "noserver");
      return null;
    }
    if (!model.available()) {
      this.setStatus(t("w_noserver"), true, "noserver");
      return null;
    }
    const off = model.onProgress(() => this.modelStatus());
    this.setStatus("", false, "loading");
    this.modelStatus();
    const ok = (await model.load()) && (await model.source(this.data.lab, "en", this.data.data));
    off();
    if (!ok) {
      this.setStatus(t("w_model_failed") + " " + model.error, true, "noserver");
      return null;
    }
    return model;
  }

  setParams(p: Record<string, unknown>): void {
    this.controls.set(p || {});
    this.updateCommand();
  }

  // run starts a run of the block in mode ("model" or "real"). A run the
  // page starts on its own (auto) shows its results but does not set
  // data-ready, which marks the end of a run someone asked for.
  async run(mode: string, auto = false, fromLink = false): Promise<void> {
    // A value the page finds wrong (a link's rtt=-5ms, a typo) still goes
    // to the model or the server: their refusal names the key and says why,
    // which the status shows and the control's mark keeps.
    this.controls.clearMarks();
    if (this.runId) this.cancel(true);
    const token = ++this.token;
    this.linked = false;
    this.mark("run");
    // Synchronously, so that whoever pressed Run sees the last run's marks
    // gone at once.
    this.finishedRun = false;
    this.auto = auto;
    delete this.fig.dataset.ready;
    delete this.fig.dataset.events;
    delete this.fig.dataset.dropped;
    this.setStatus(t("w_connecting"));
    const tr = await this.transport(mode);
    if (token !== this.token || !tr) return; // a later run took over, or none can run
    this.tr = tr;
    this.mode = mode;
    this.real = mode === "real";
    const id = tr.newID(this.block);
    const params = this.controls.params();
    this.defaults = Object.keys(params).length === 0 && this.controls.seedValue() === undefined;
    const msg: Record<string, unknown> & { id: string } = { id, lab: this.data.lab, block: this.block, mode, params };
    const seed = this.controls.seedValue();
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
    this.notes.replaceChildren();
    this.setPanes(this.data.variants.map((v) => this.fresh(v.name, v.label, v.settings)));
    this.renderCalls(); // empties the table until this run is done
    this.callsStale = true;
    if (!auto && !fromLink) this.remember();
    if (!sent) {
      this.finish();
      this.setStatus(t("w_lost"), true);
      return;
    }
    this.fig.dataset.state = "running";
    this.cancelBtn.hidden = false;
    this.setStatus(this.real ? t("w_running_real") : t("w_running"));
    this.summaryDirty = true;
    // A run that is done within the streaming gap is drawn once, done,
    // without a drawing of its empty panes first.
    this.lastDraw = performance.now();
    this.schedule();
  }

  private cancel(quiet = false): void {
    if (!this.runId) return;
    this.tr.cancel(this.runId);
    this.tr.forget(this.runId);
    this.finish();
    if (!quiet) this.setStatus(t("w_cancelled"));
  }

  private finish(): void {
    this.runId = "";
    this.cancelBtn.hidden = true;
    this.fig.dataset.state = "idle";
  }

  private onMessage(m: ServerMsg): void {
    if (m.id && m.id !== this.runId) return;
    switch (m.type) {
      case "queued":
        this.setStatus(t("w_queued", { n: m.position ?? "?" }));
        break;
      case "started": {
        this.mark("started");
        this.effective = m.params || {};
        const names = (m.variants || []) as { name: string; label?: string }[];
        if (names.length) {
          const defs = this.data.variants;
          this.setPanes(names.map((v) => {
            const def = defs.find((x) => x.name === v.name);
            return this.fresh(v.name, def?.label || v.label || v.name, def?.settings || {}); // the page's label: its language
          }));
        }
        this.setStatus(this.real ? t("w_running_real") : t("w_running"));
        break;
      }
      case "events": {
        const d = this.variant(m.variant);
        const evs = m.events || [];
        if (d) for (let i = 0; i < evs.length; i++) d.add(evs[i]);
        const chain = this.panes.find((p) => p.d === d)?.chain;
        if (chain) for (let i = 0; i < evs.length; i++) chain.add(evs[i]);
        this.events += evs.length;
        break;
      }
      case "stats": {
        const d = this.variant(m.variant);
        if (d && m.summary) d.summary = m.summary;
        if (d && m.series) d.series = m.series;
        this.summaryDirty = true;
        break;
      }
      case "truncated": {
        const d = this.variant(m.variant);
        if (d) d.truncated = m.sent || 1;
        this.note(t("w_truncated", { variant: d?.label || m.variant || "", n: int(m.sent || 0) }));
        break;
      }
      case "dropped":
        this.dropped += m.count || 0;
        this.fig.dataset.dropped = String(this.dropped);
        this.note(t("w_dropped", { n: int(m.count || 0) }));
        break;
      case "done": {
        for (const v of (m.variants || []) as DoneVariant[]) {
          const d = this.variant(v.name);
          if (!d) continue;
          if (v.summary) d.summary = v.summary;
          this.panes.find((p) => p.d === d)?.chain?.fromSummary(d.summary);
          d.error = v.error || "";
          d.runtime = v.runtime || null;
          d.checks = v.checks || null;
          d.modelError = v.model_error || "";
          d.model = v.model || null;
          d.compare = phaseRows(v.compare);
          d.overhead = v.harness_overhead_ms || 0;
          d.verdict = v.verdict || "";
          d.busyCPUs = v.busy_cpus || 0;
          if (v.series && v.series.length) d.series = v.series;
          else if (d.truncated && this.defaults && !this.real) {
            // The stream was cut short; with the block's own parameters the
            // build-time run is the same run, so its time series completes it.
            const b = this.data.results?.variants?.find((x) => x.name === d.name);
            if (b?.series?.length) d.series = b.series;
          }
        }
        this.mark("done");
        this.checks = m.checks || null;
        this.fig.dataset.events = String(this.events);
        if (!firstResult) {
          firstResult = true;
          settleFirst();
          performance.mark("connlab:first-result");
        }
        this.finishedRun = !this.auto;
        this.finish();
        const elapsed = num(m.elapsed_ms || 0);
        this.setStatus(this.real ? t("w_done_real", { ms: elapsed }) : t("w_done", { events: int(this.events), ms: elapsed }), false, "done");
        this.summaryDirty = true;
        this.callsStale = true;
        if (this.callsEl.open) this.renderCalls();
        this.announce();
        break;
      }
      case "error": {
        const msg = m.message || "";
        if (m.field) this.controls.mark(m.field, msg);
        // The key, then why: the model's messages begin with their key.
        const text = (m.field && !msg.includes(m.field + ":") ? m.field + ": " : "") + msg;
        if (m.message === "cancelled") {
          this.finish();
          this.setStatus(t("w_cancelled"));
        } else {
          if (m.id) this.finish();
          this.setStatus(t("w_failed") + " " + text, true, "error");
        }
        break;
      }
      case "lost":
        this.finish();
        this.setStatus(t("w_lost"), true, "error");
        break;
    }
    this.schedule();
  }

  // mark records a step of a run in the page's performance timeline
  // ("connlab:BLOCK:done"), the last of each step only: benchmarks read
  // them.
  private mark(step: string): void {
    const name = "connlab:" + this.block + ":" + step;
    performance.clearMarks(name);
    performance.mark(name);
  }

  // announce tells the page's figures (figures.ts) what a run gave: the
  // "connlab:result" page event (sim/server/PROTOCOL.md) with each
  // variant's scenario and its first calls' curl times.
  private announce(): void {
    const variants = this.panes.map((p) => ({
      name: p.d.name,
      params: this.effective[p.d.name] || {},
      summary: p.d.summary,
      calls: p.d.calls.slice(0, 16).map((c) => {
        // curl's names for the cumulative times (PHASES order), as events carry them.
        const call: Record<string, number | boolean | string> = { new_conn: c.newConn, handshake: c.handshake, error: c.error };
        PHASES.forEach((ph, i) => {
          if (ph.curl) call[ph.json] = c.t[i];
        });
        call.total_ms = c.total;
        return call;
      }),
    }));
    document.dispatchEvent(new CustomEvent("connlab:result", { detail: { block: this.block, mode: this.real ? "real" : "model", variants } }));
  }

  private note(s: string): void {
    this.notes.append(el("li", "", s));
  }

  private setStatus(s: string, bad = false, state = ""): void {
    this.status.textContent = s;
    this.status.classList.toggle("bad", bad);
    this.status.dataset.state = state;
  }

  // schedule draws at the next animation frame; while a run streams, at
  // most ten times a second and no more often than the last drawing's cost
  // allows, so a fast stream never starves the page.
  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      const gap = this.runId ? Math.max(100, this.drawCost * 4) : 0;
      const wait = gap - (performance.now() - this.lastDraw);
      if (wait > 0) {
        this.frame = 0;
        setTimeout(() => this.schedule(), wait);
        return;
      }
      this.frame = 0;
      const t0 = performance.now();
      this.draw();
      this.lastDraw = performance.now();
      this.drawCost = this.lastDraw - t0;
    });
  }

  private draw(): void {
    const vs = this.panes.map((p) => p.d);
    if (!this.alignSet) this.align.checked = vs.some((d) => d.calls.length > 200);
    const aligned = this.align.checked;
    let hi = 0;
    let rows = 0;
    let gauge = 0;
    for (const d of vs) {
      hi = Math.max(hi, aligned ? d.maxTotal : d.callEnd);
      rows = Math.max(rows, d.callEnd, d.sockEnd);
      gauge = Math.max(gauge, d.tEnd, d.series && d.series.length ? d.series[d.series.length - 1].t_s * 1000 : 0);
    }
    const x = { lo: 0, hi: (hi || 1) * 1.02, aligned };
    for (const p of this.panes) {
      p.wf.render(p.d, x);
      p.tl.render(p.d, (rows || 1) * 1.04, gauge || 1);
      p.chain?.render();
    }
    this.cdf.render(vs);
    if (this.summaryDirty) {
      this.summaryDirty = false;
      renderSummary(this.summaryEl, vs, this.real, "");
      renderChecks(this.checksEl, this.checks);
    }
    if (this.finishedRun) {
      // Everything of the finished run is on screen (tests wait for this).
      this.finishedRun = false;
      this.fig.dataset.ready = "1";
      this.mark("drawn");
    }
  }

  // renderCalls lists the calls of each variant as a table: the waterfall's
  // numbers, readable and copyable.
  private renderCalls(): void {
    this.callsStale = false;
    const keep = this.callsEl.querySelector("summary")!;
    this.callsEl.replaceChildren(keep);
    for (const p of this.panes) {
      const d = p.d;
      if (!d.calls.length) continue;
      const table = el("table", "sim-table sim-calls-table");
      table.dataset.variant = d.name;
      const shown = Math.min(d.calls.length, TABLE_ROWS);
      table.append(el("caption", "", d.label + " · " + int(shown) + (shown < d.calls.length ? " / " + int(d.calls.length) : "") + " " + t("m_calls")));
      const head = el("tr");
      for (const h of ["#", t("w_col_worker"), t("w_col_conn"), "num_connects", ...CURL.map((i) => PHASES[i].curl!), ""]) head.append(el("th", "", h));
      table.createTHead().append(head);
      const body = table.createTBody();
      for (let i = 0; i < shown; i++) {
        const c = d.calls[i];
        const tr = el("tr", c.error ? "bad" : c.newConn ? "new" : "");
        tr.dataset.req = String(c.req);
        tr.dataset.call = String(c.call);
        tr.dataset.conn = String(c.conn);
        tr.dataset.new = c.newConn ? "1" : "0";
        tr.dataset.total = String(c.total);
        const cells = [c.req + (c.call > 1 ? "." + c.call : ""), String(c.worker || ""), c.conn ? "c" + c.conn : "", c.newConn ? "1" : "0",
          ...CURL.map((i) => ms(c.t[i])), c.error || (c.retried ? t("w_retried") : "")];
        for (const s of cells) tr.append(el("td", "", s));
        body.append(tr);
      }
      this.callsEl.append(table);
    }
  }

  private command(): string {
    const parts = ["go run ./sim/cmd/sim run --block", this.block];
    for (const [k, v] of Object.entries(this.controls.params())) parts.push("--set", shellQuote(k + "=" + (typeof v === "string" ? v : JSON.stringify(v))));
    const seed = this.controls.seedValue();
    if (seed !== undefined) parts.push("--seed", String(seed));
    parts.push(this.data.file);
    return parts.join(" ");
  }

  private updateCommand(): void {
    this.cmdEl.textContent = this.command();
  }

  // linkState is the block's state as a link's query.
  private linkQuery(): string {
    return blockQuery(this.block, this.controls.params(), this.controls.seedValue() ?? 1);
  }

  // link is an address that opens this page with the block's state and
  // runs it.
  link(): string {
    return new URL("?" + this.linkQuery() + "#sim-" + this.block, location.href).href;
  }

  // remember puts the state of a run someone asked for into the address,
  // so the address bar is a link to it too.
  private remember(): void {
    try {
      history.replaceState(history.state, "", withBlock(location.search, this.block, this.linkQuery()) + location.hash || location.pathname);
    } catch {
      /* a file:// page may refuse */
    }
  }

  private async copyLink(): Promise<void> {
    const text = this.link();
    this.fig.dataset.link = text;
    try {
      await navigator.clipboard.writeText(text);
      this.linkBtn.textContent = t("w_copied");
    } catch {
      this.cmdEl.textContent = text;
      this.linkBtn.textContent = t("w_copy_failed");
      setTimeout(() => this.updateCommand(), 4000);
    }
    setTimeout(() => (this.linkBtn.textContent = t("w_copy_link")), 1800);
  }

  private async copy(): Promise<void> {
    const text = this.command();
    try {
      await navigator.clipboard.writeText(text);
      this.copyBtn.textContent = t("w_copied");
    } catch {
      const r = document.createRange();
      r.selectNodeContents(this.cmdEl);
      const sel = window.getSelection();
      sel?.removeAllRanges();
      sel?.addRange(r);
      this.copyBtn.textContent = t("w_copy_failed");
    }
    setTimeout(() => (this.copyBtn.textContent = t("w_copy")), 1800);
  }

  private tip(html: string | null, e?: MouseEvent): void {
    const tip = this.tipEl;
    if (!html || !e) {
      tip.hidden = true;
      return;
    }
    tip.innerHTML = html;
    tip.hidden = false;
    const fr = this.fig.getBoundingClientRect();
    const w = tip.offsetWidth;
    let x = e.clientX - fr.left + 14;
    if (x + w > fr.width - 4) x = e.clientX - fr.left - w - 14;
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = e.clientY - fr.top + 14 + "px";
  }
}

function phaseRows(c: DoneVariant["compare"]): PhaseRow[] | null {
  if (!c) return null;
  if (Array.isArray(c)) return c;
  return c.phases || null;
}

export { ms };
