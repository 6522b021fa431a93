// The chain view of a block with tiers (sim/chain.go): the load and the
// tiers in a row, with, on each hop, the connections open now and the
// TIME_WAIT sockets on its connecting and accepting sides; below, one
// request's calls through every hop as a small waterfall. Events carry
// their hop (1: the load to the first tier). A real run of the stack
// streams no per-call events: its totals come from the summary instead.
import { ERROR, el } from "./canvas";
import type { PaneChartKind } from "./chart";
import { PHASES } from "./schema.gen";
import { int, ms, t } from "./i18n";
import type { Event as Ev, Summary } from "./types";

// Colours of the phases this view draws (schema.gen.ts: PHASES).
const colour = (seg: string): string => PHASES.find((p) => p.segment === seg)?.color || "#888";

interface HopState { open: number; idle: number; twClient: number; twServer: number; connects: number }

// dns, connect and tls: when the call's lookup ended, its new connection
// was up and its TLS handshake done (0: none), from the call's start.
interface ReqCall { hop: number; call: number; start: number; dns: number; connect: number; tls: number; total: number; newConn: boolean; error: boolean }

// The request the waterfall shows: one after the users' first round, so
// that kept connections show as kept (the first request, in a run of fewer).
const SHOWN_REQUEST = 30;

// chainChart is the chain view at the top of each pane of a block with
// tiers (the build-time run's summary names them); none for one hop.
export const chainChart: PaneChartKind = {
  make({ data, variant }) {
    const tiers = chainOf(data.results?.variants?.find((x) => x.name === variant.name)?.summary);
    if (!tiers) return null;
    const chain = new ChainView(tiers);
    return {
      nodes: [chain.root],
      render: () => chain.render(),
      reset: () => chain.reset(),
      add: (e) => chain.add(e),
      done: (d) => chain.fromSummary(d.summary),
    };
  },
};

export class ChainView {
  readonly root = el("div", "sim-chain");
  private diagram = el("div", "sim-chain-tiers");
  private waterfall = el("div", "sim-chain-waterfall");
  private caption = el("p", "sim-sub");
  private hops: HopState[] = [];
  private calls = new Map<number, ReqCall[]>(); // of request 1 and SHOWN_REQUEST
  private totals = false; // the counts are a summary's, not the stream's
  private dirty = true;

  private readonly named: string[]; // the tiers as the block names them

  constructor(private tiers: string[]) {
    this.named = tiers.slice();
    this.root.append(el("p", "sim-sub", t("w_chain")), this.diagram, this.caption, this.waterfall);
    this.root.dataset.tiers = tiers.join(",");
    this.reset();
  }

  // reset empties the view for a new run of the same variant: a pane that
  // stays on the page keeps its chain view, not the last run's calls.
  reset(): void {
    this.tiers = this.named.slice();
    this.hops = this.tiers.map(() => ({ open: 0, idle: 0, twClient: 0, twServer: 0, connects: 0 }));
    this.calls.clear();
    this.totals = false;
    this.dirty = true;
  }

  private hop(e: Ev): HopState | null {
    const h = (e.hop || 0) - 1;
    if (h < 0) return null;
    while (this.hops.length <= h) {
      this.hops.push({ open: 0, idle: 0, twClient: 0, twServer: 0, connects: 0 });
      this.tiers.push("hop " + (this.hops.length));
    }
    return this.hops[h];
  }

  add(e: Ev): void {
    const h = this.hop(e);
    if (!h) return;
    this.dirty = true;
    switch (e.kind) {
      case "open":
        h.open++;
        h.connects++;
        break;
      case "idle":
        h.idle++;
        break;
      case "close":
        h.open = Math.max(0, h.open - 1);
        break;
      case "time_wait":
        if (e.by === "server") h.twServer++;
        else h.twClient++;
        break;
      case "time_wait_end":
        if (e.by === "server") h.twServer = Math.max(0, h.twServer - 1);
        else h.twClient = Math.max(0, h.twClient - 1);
        break;
      case "call":
        if (e.reused) h.idle = Math.max(0, h.idle - 1);
        this.addCall(e);
        break;
    }
  }

  private addCall(e: Ev): void {
    const req = e.req || 0;
    if (req !== 1 && req !== SHOWN_REQUEST) return;
    let list = this.calls.get(req);
    if (!list) this.calls.set(req, (list = []));
    list.push({
      hop: e.hop || 0, call: e.call || 1, start: e.start_ms || 0,
      dns: e.new_conn ? e.namelookup_ms || 0 : 0, connect: e.new_conn ? e.connect_ms || 0 : 0,
      tls: e.new_conn ? e.appconnect_ms || 0 : 0, total: e.total_ms || 0, newConn: !!e.new_conn, error: !!e.error,
    });
  }

  // fromSummary shows a finished run's totals per hop: the most
  // connections open at once, those opened, and the sockets that entered
  // TIME_WAIT on each side (the stream may have been cut short, and a real
  // stack run streams no per-call events at all).
  fromSummary(s: Summary | null): void {
    const hop = s?.hop as Record<string, Record<string, number>> | undefined;
    const chain = s?.chain as string[] | undefined;
    if (!hop || !chain) return;
    this.totals = true;
    this.tiers = chain.slice();
    this.hops = chain.map((n) => {
      const x = hop[n] || {};
      return { open: x.open_peak || 0, idle: x.idle_peak || 0, twClient: x.time_wait_client || 0, twServer: x.time_wait_server || 0, connects: x.connects || 0 };
    });
    this.dirty = true;
  }

  render(): void {
    if (!this.dirty) return;
    this.dirty = false;
    this.renderDiagram();
    this.renderWaterfall();
  }

  private renderDiagram(): void {
    const parts: HTMLElement[] = [el("div", "sim-chain-tier", t("w_chain_load"))];
    this.tiers.forEach((name, i) => {
      const h = this.hops[i];
      const hop = el("div", "sim-chain-hop");
      hop.dataset.hop = name;
      hop.dataset.open = String(h.open);
      hop.dataset.twClient = String(h.twClient);
      hop.dataset.twServer = String(h.twServer);
      hop.dataset.connects = String(h.connects);
      const open = el("span", "sim-chain-open", t(this.totals ? "w_chain_open_peak" : "w_chain_open", { n: int(h.open) }));
      const tw = el("span", "sim-chain-tw");
      const c = el("b", "tw-client", int(h.twClient));
      const s = el("b", "tw-server", int(h.twServer));
      c.title = t("w_chain_tw_client");
      s.title = t("w_chain_tw_server");
      tw.append("TIME_WAIT ", c, " | ", s);
      const conn = el("span", "sim-chain-connects", t("w_chain_connects", { n: int(h.connects) }));
      hop.append(el("span", "sim-chain-arrow", "↓"), open, tw, conn);
      // The tier's name is the scenario's identifier (tier.NAME.* keys),
      // not prose: it stays as written in every language.
      const tier = el("div", "sim-chain-tier", name);
      tier.translate = false;
      parts.push(hop, tier);
    });
    this.diagram.replaceChildren(...parts);
  }

  private renderWaterfall(): void {
    const req = this.calls.has(SHOWN_REQUEST) ? SHOWN_REQUEST : 1;
    const calls = (this.calls.get(req) || []).filter((c) => c.hop >= 1);
    if (!calls.length) {
      this.caption.textContent = this.totals ? t("w_chain_no_calls") : "";
      this.waterfall.replaceChildren();
      return;
    }
    this.caption.textContent = t("w_chain_request", { n: int(req) });
    const t0 = Math.min(...calls.map((c) => c.start));
    const t1 = Math.max(...calls.map((c) => c.start + c.total));
    const span = Math.max(t1 - t0, 1e-6);
    const rows = calls.slice().sort((a, b) => a.hop - b.hop || a.start - b.start);
    const out: HTMLElement[] = [];
    for (const c of rows) {
      const row = el("div", "sim-chain-row");
      row.dataset.hop = String(c.hop);
      row.dataset.new = c.newConn ? "1" : "0";
      const label = el("span", "sim-chain-label", (this.tiers[c.hop - 1] || "hop " + c.hop) + (c.call > 1 ? " #" + c.call : ""));
      const track = el("span", "sim-chain-track");
      const bar = el("span", "sim-chain-bar");
      bar.style.left = ((100 * (c.start - t0)) / span).toFixed(2) + "%";
      bar.style.width = Math.max(0.5, (100 * c.total) / span).toFixed(2) + "%";
      bar.style.background = c.error ? ERROR : colour("wait");
      const pct = (v: number): string => ((100 * v) / Math.max(c.total, 1e-6)).toFixed(2) + "%";
      // The new connection's phases, each from where the last ended.
      let from = 0;
      for (const [end, seg] of [[c.dns, "dns"], [c.connect, "connect"], [c.tls, "tls"]] as [number, string][]) {
        if (end <= from) continue;
        const part = el("span", "sim-chain-connect");
        part.style.left = pct(from);
        part.style.width = pct(end - from);
        part.style.background = colour(seg);
        bar.append(part);
        from = end;
      }
      bar.title = ms(c.total) + (c.newConn ? " · " + t("w_chain_new_conn") : " · " + t("w_chain_reused"));
      track.append(bar);
      row.append(label, track, el("span", "sim-chain-ms", ms(c.total)));
      out.push(row);
    }
    this.waterfall.replaceChildren(...out);
  }
}

// chainOf returns the tiers of a block's summary (sim run --json's
// "chain"), or null for a single hop.
export function chainOf(s: Summary | null | undefined): string[] | null {
  const c = s?.chain;
  return Array.isArray(c) && c.length ? (c as string[]).slice() : null;
}
