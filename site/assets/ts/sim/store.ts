// What one variant of a run has streamed so far: calls (the waterfall's
// rows), sockets (the connection timeline's rows) and port errors. Events
// arrive in time order (sim/engine.go emits them so, the harness too).
import { PHASES } from "./schema.gen";
import type { Event, PhaseJSON, Sample, Summary, SummaryPhaseJSON, PhaseRow } from "./types";

// A Call is one row of the waterfall. Times are ms: start from the run's
// start; t, each phase's time (PHASES order), from the call's start,
// cumulative as curl reports them; total is the last.
export interface Call {
  req: number; call: number; worker: number; conn: number;
  newConn: boolean; reused: boolean; retried: boolean;
  start: number; t: number[]; total: number; error: string; handshake: string;
}

// A call uses its connection from connect() on (after the phases before
// it, DNS on a new connection), or once it has one from the pool.
const CONNECT = PHASES.findIndex((p) => p.key === "connect");

// phaseTime reads phase i's time of a call event.
function phaseTime(e: Event, i: number): number {
  return e[PHASES[i].json as PhaseJSON] || 0;
}

// A Sock is one connection's life, client side: opened (connect() began),
// used, closed by a side, then TIME_WAIT on the side that closed first.
export interface Sock {
  id: number; port: number; worker: number; open: number;
  busy: number[]; // [start, end, start, end, …] of the calls it carried
  close: number; closeBy: string; reason: string;
  tw: number; twEnd: number; twBy: string;
}

export class VariantData {
  calls: Call[] = [];
  socks: Sock[] = [];
  portErrors: number[] = [];
  events = 0;
  tEnd = 0; // latest event time, ms
  maxTotal = 0; // longest call, ms
  callEnd = 0; // when the last call ended, ms
  sockEnd = 0; // the last open, close or port error, ms
  summary: Summary | null = null; // measured (real) or modelled
  model: Summary | null = null; // the model's prediction of a real run
  compare: PhaseRow[] | null = null;
  overhead = 0; // ms the harness itself adds to a call (real runs)
  // A real run's verdict: inconclusive when its phases missed on a machine
  // other programs kept busy (busyCPUs: how many CPUs they used).
  verdict = "";
  busyCPUs = 0;
  series: Sample[] | null = null;
  error = "";
  // Real runs: the software that ran, what its probing script printed by
  // check id, and the model's text for a variant the real software refused.
  runtime: Record<string, string> | null = null;
  checks: Record<string, string> | null = null;
  modelError = "";
  truncated = 0;
  // Rows the build-time run had (calls, connections): charts take that room
  // from the start, so a run filling them does not shift the page.
  expectCalls = 0;
  expectSocks = 0;
  private byId = new Map<number, Sock>();
  private byPort = new Map<number, Sock>();
  private twQueue: Record<string, Sock[]> = { client: [], server: [] };
  private twHead: Record<string, number> = { client: 0, server: 0 };
  private twByPort: Record<string, Map<number, Sock>> = { client: new Map(), server: new Map() };
  private lastServerClose: Sock | null = null;

  constructor(public name: string, public label: string, public settings: Record<string, unknown> = {}) {}

  add(e: Event): void {
    this.events++;
    if (e.at_ms > this.tEnd) this.tEnd = e.at_ms;
    switch (e.kind) {
      case "call":
        this.addCall(e);
        break;
      case "open":
      case "close":
      case "port_error":
        if (e.at_ms > this.sockEnd) this.sockEnd = e.at_ms;
    }
    switch (e.kind) {
      case "open": {
        const s: Sock = {
          id: e.conn || 0, port: e.local_port || 0, worker: e.worker || 0, open: e.at_ms,
          busy: [], close: -1, closeBy: "", reason: "", tw: -1, twEnd: -1, twBy: "",
        };
        this.socks.push(s);
        if (s.id) this.byId.set(s.id, s);
        if (s.port) this.byPort.set(s.port, s);
        break;
      }
      case "close": {
        const s = this.byId.get(e.conn || 0);
        if (s && s.close < 0) {
          s.close = e.at_ms;
          s.closeBy = e.by || "";
          s.reason = e.reason || "";
        }
        if (s && e.by === "server") this.lastServerClose = s;
        break;
      }
      case "time_wait": {
        const side = e.by === "server" ? "server" : "client";
        let s: Sock | null | undefined = null;
        if (e.local_port) s = this.byPort.get(e.local_port);
        else if (side === "server" && this.lastServerClose && this.lastServerClose.close === e.at_ms) s = this.lastServerClose;
        const entry: Sock = s && s.tw < 0 ? s : {
          id: 0, port: e.local_port || 0, worker: 0, open: -1, busy: [], close: e.at_ms,
          closeBy: side, reason: "", tw: -1, twEnd: -1, twBy: "",
        };
        entry.tw = e.at_ms;
        entry.twBy = side;
        this.twQueue[side].push(entry);
        if (e.local_port) this.twByPort[side].set(e.local_port, entry);
        break;
      }
      case "time_wait_end": {
        // A socket taken over (tcp_tw_reuse, or a new SYN on the server's)
        // is found by its port; one that expires is the side's oldest.
        const side = e.by === "server" ? "server" : "client";
        const q = this.twQueue[side];
        let s = e.local_port ? this.twByPort[side].get(e.local_port) : undefined;
        if (!s || s.twEnd >= 0) {
          while (this.twHead[side] < q.length && q[this.twHead[side]].twEnd >= 0) this.twHead[side]++;
          s = q[this.twHead[side]];
        }
        if (s) s.twEnd = e.at_ms;
        let i = this.twHead[side];
        while (i < q.length && q[i].twEnd >= 0) i++;
        this.twHead[side] = i;
        if (i > 4096) {
          q.splice(0, i);
          this.twHead[side] = 0;
        }
        break;
      }
      case "port_error":
        this.portErrors.push(e.at_ms);
        break;
    }
  }

  // addMedian adds one row drawn from a summary's medians (curl's
  // cumulative times, each the median over the calls): what the page shows
  // of a variant before any run. Its req is 0, so the waterfall labels it.
  addMedian(s: Summary): void {
    const e: Event = { kind: "call", at_ms: s.total_ms.p50, req: 0, call: 1, start_ms: 0 };
    for (const p of PHASES) {
      if (!p.summary_field) continue;
      const v = s[p.json as SummaryPhaseJSON].p50;
      e[p.json as PhaseJSON] = v;
      if (p.setup && v > 0) e.new_conn = true;
    }
    this.addCall(e);
    this.events = 0;
  }

  private addCall(e: Event): void {
    const start = e.start_ms || 0;
    const t = PHASES.map((_, i) => phaseTime(e, i));
    const c: Call = {
      req: e.req || 0, call: e.call || 0, worker: e.worker || 0, conn: e.conn || 0,
      newConn: !!e.new_conn, reused: !!e.reused, retried: !!e.retried,
      start, t, total: e.total_ms || 0, error: e.error || "", handshake: e.handshake || "",
    };
    if (c.total > this.maxTotal) this.maxTotal = c.total;
    if (start + c.total > this.callEnd) this.callEnd = start + c.total;
    // Rows are ordered by start; calls end nearly in start order, so an
    // insertion from the end is cheap.
    const a = this.calls;
    let i = a.length;
    while (i > 0 && (a[i - 1].start > start || (a[i - 1].start === start && a[i - 1].req > c.req))) i--;
    if (i === a.length) a.push(c);
    else a.splice(i, 0, c);
    const s = this.byId.get(c.conn);
    if (s && !c.error) {
      let using = 0;
      for (let k = 0; k < CONNECT; k++) if (c.newConn || !PHASES[k].setup) using = Math.max(using, t[k]);
      s.busy.push(Math.max(start + using, s.open), start + c.total);
    }
  }

  // socketCount is how many sockets the timeline would draw as rows.
  get sockCount(): number {
    return this.socks.length;
  }
}
