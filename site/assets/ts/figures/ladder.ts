// The packet ladder ({{< ladder block="call" >}}): every packet of one call
// between client and server, to the time scale of the call's curl times.
// Its RTT and TLS controls ask the block's widget for a run (the
// "connlab:run" page event) and redraw from the run's first call (the
// "connlab:result" event, sim/server/PROTOCOL.md). Before any run it draws
// the build-time result.
//
// The round trips inside a phase are derived from the call's phase times,
// the RTT and the TLS version and handshake kind (full, resumed, 0-RTT):
// TCP's three packets end at time_connect, the last TLS flight at
// time_appconnect, the first byte of the answer at time_starttransfer.
import { PHASES } from "../sim/schema.gen";
import type { Handshake, PhaseJSON, Reuse, Side, SummaryPhaseJSON, TLSVersion } from "../sim/schema.gen";
import { type Strings, blockData, el, fill, ms, nf, svg } from "./common";

// CallTimes are one call's curl times (ms, cumulative from its start), one
// for each phase a Summary holds, and how it got its connection.
type CallTimes = Record<SummaryPhaseJSON, number> & { new_conn: boolean; handshake: Handshake | "" };

// ladderMarks says, for each phase of sim's table, whether the ladder marks
// its end on call c. It is a Record over the generated phase keys, so a
// phase added to sim fails the type check (make tsc) until the ladder says
// how it draws it. Queue has no curl time and no packet: it is not marked.
const ladderMarks: Record<PhaseJSON, ((c: CallTimes) => boolean) | null> = {
  queue_ms: null,
  namelookup_ms: (c) => c.new_conn && c.namelookup_ms > 0,
  connect_ms: (c) => c.new_conn,
  appconnect_ms: (c) => c.new_conn && !!c.handshake,
  starttransfer_ms: () => true,
  total_ms: () => true,
};

// Scenario is what the ladder reads of a call's scenario: the words are
// sim's vocabulary (schema.gen.ts), read from a run's parameters.
interface Scenario { rtt: number; tls: TLSVersion; closer: Side; reuse: Reuse | "" }

// scenarioOf reads a Scenario from a run's or a block's parameters (ms: the
// RTT in milliseconds), with sim's defaults for the keys it lacks.
function scenarioOf(p: Record<string, unknown>, rtt: number): Scenario {
  return { rtt, tls: String(p.tls ?? "1.3") as TLSVersion, closer: String(p.closer ?? "client") as Side, reuse: String(p.reuse ?? "") as Reuse | "" };
}

// A Packet is one arrow of the ladder: sent by from at t0, received at t1.
export interface Packet { from: "c" | "s"; t0: number; t1: number; label: string; kind: "tcp" | "tls" | "http" | "data" | "fin" }

// ladderPackets derives the packets of one call from its curl times (ms,
// cumulative from the call's start) and its scenario.
export function ladderPackets(c: CallTimes, sc: Scenario, S: Strings): Packet[] {
  const out: Packet[] = [];
  const rtt = sc.rtt;
  const half = rtt / 2;
  const push = (from: "c" | "s", t0: number, t1: number, label: string, kind: Packet["kind"]) => out.push({ from, t0, t1, label, kind });
  let sent = c.connect_ms; // when the request leaves
  if (c.new_conn) {
    const ns = c.namelookup_ms;
    push("c", ns, ns + half, "SYN", "tcp");
    push("s", ns + half, c.connect_ms, "SYN-ACK", "tcp");
    push("c", c.connect_ms, c.connect_ms + half, "ACK", "tcp");
    const co = c.connect_ms;
    const ap = c.appconnect_ms;
    const hs = c.handshake;
    if (hs) {
      sent = ap;
      if (hs === "0-rtt") {
        push("c", co, co + half, "ClientHello + " + S.fig_early, "tls");
        push("s", co + half, ap, "ServerHello … Finished", "tls");
        push("c", ap, ap + half, "Finished", "tls");
        sent = -1; // the request rode with the ClientHello
      } else if (sc.tls === "1.2" && hs === "full") {
        push("c", co, co + half, "ClientHello", "tls");
        push("s", co + half, co + rtt, "ServerHello, Certificate, ServerHelloDone", "tls");
        push("c", co + rtt, co + rtt + half, "ClientKeyExchange, ChangeCipherSpec, Finished", "tls");
        push("s", co + rtt + half, ap, "ChangeCipherSpec, Finished", "tls");
      } else if (sc.tls === "1.2") {
        push("c", co, co + half, "ClientHello", "tls");
        push("s", co + half, ap, "ServerHello, ChangeCipherSpec, Finished", "tls");
        push("c", ap, ap + half, "ChangeCipherSpec, Finished", "tls");
      } else {
        push("c", co, co + half, "ClientHello", "tls");
        push("s", co + half, ap, "ServerHello … Finished", "tls");
        push("c", ap, ap + half, "Finished", "tls");
      }
    }
  } else {
    sent = c.namelookup_ms; // a kept connection: the request leaves at once
  }
  const st = c.starttransfer_ms;
  if (sent >= 0) push("c", sent, sent + half, S.fig_request, "http");
  push("s", st - half, st, S.fig_response, "http");
  // The rest of the answer: a window a round trip, as slow start allows.
  const more = rtt > 0 ? Math.max(0, Math.round((c.total_ms - st) / rtt)) : 0;
  for (let i = 1; i <= more; i++) {
    push("c", st + (i - 1) * rtt, st + (i - 1) * rtt + half, "ACK", "data");
    push("s", st + i * rtt - half, st + i * rtt, S.fig_data, "data");
  }
  if (sc.reuse === "none") {
    const closer: "c" | "s" = sc.closer === "server" ? "s" : "c";
    const other: "c" | "s" = closer === "c" ? "s" : "c";
    const to = c.total_ms;
    push(closer, to, to + half, "FIN", "fin");
    push(other, to + half, to + rtt, "ACK, FIN", "fin");
    push(closer, to + rtt, to + rtt + half, "ACK", "fin");
  }
  return out;
}

export class Ladder {
  private S: Strings;
  private block: string;
  private rtt: HTMLInputElement;
  private rttOut: HTMLOutputElement;
  private tls: HTMLSelectElement;
  private pic: HTMLElement;
  private status: HTMLElement;
  private pending = 0;

  constructor(private root: HTMLElement) {
    this.S = JSON.parse(root.querySelector("script.fig-strings")?.textContent || "{}");
    this.block = root.dataset.block || "";
    const S = this.S;
    const controls = el("div", "fig-controls");
    const id = "ladder-" + this.block;
    const l1 = el("label", "", S.fig_rtt + " ");
    this.rtt = el("input");
    this.rtt.type = "range";
    this.rtt.min = "5";
    this.rtt.max = "200";
    this.rtt.step = "5";
    this.rtt.id = id + "-rtt";
    this.rttOut = el("output");
    l1.append(this.rtt, " ", this.rttOut);
    const l2 = el("label", "", S.fig_tls + " ");
    this.tls = el("select");
    this.tls.id = id + "-tls";
    for (const [v, text] of [["1.3", "TLS 1.3"], ["1.2", "TLS 1.2"], ["none", S.fig_tls_none]]) {
      const o = el("option", "", text);
      o.value = v;
      this.tls.append(o);
    }
    l2.append(this.tls);
    this.status = el("span", "fig-status");
    this.status.setAttribute("role", "status");
    controls.append(l1, l2, this.status);
    this.pic = el("div", "fig-pic");
    root.querySelector(".fig-fallback")?.remove();
    root.append(controls, this.pic);
    this.rtt.addEventListener("input", () => (this.rttOut.value = this.rtt.value + " ms"));
    this.rtt.addEventListener("change", () => this.ask());
    this.tls.addEventListener("change", () => this.ask());
    document.addEventListener("connlab:result", (e) => {
      const d = (e as CustomEvent).detail || {};
      if (d.block !== this.block || d.mode !== "model") return;
      const v = (d.variants || [])[0];
      if (!v || !v.calls || !v.calls.length) return;
      const p = v.params || {};
      this.setControls(ms(p.rtt), String(p.tls ?? "1.3"));
      this.draw(v.calls[0], scenarioOf(p, ms(p.rtt)));
      this.pending = 0;
      this.root.dataset.state = "ready";
      this.status.textContent = "";
    });
    this.fromBuild();
  }

  private setControls(rtt: number, tls: string): void {
    this.rtt.value = String(rtt);
    this.rttOut.value = nf.format(rtt) + " ms";
    this.tls.value = tls;
  }

  // fromBuild draws the block's build-time call: its medians are the one
  // call's times when the block makes one call.
  private fromBuild(): void {
    const d = blockData(this.block);
    if (!d) return;
    const ctl: Record<string, unknown> = {};
    for (const c of d.controls || []) ctl[c.key] = c.value;
    for (const [k, v] of Object.entries(d.fixed || {})) ctl[k] = v;
    const v = d.results?.variants?.[0];
    const s = v?.summary;
    if (!s) return;
    const p50 = (k: string) => Number(s[k]?.p50 ?? 0);
    const sc = scenarioOf(ctl, ms(ctl.rtt));
    this.setControls(sc.rtt, sc.tls);
    const hs = sc.tls === "none" ? "" : ctl.early_data === true ? "0-rtt" : "full";
    const times = {} as Record<SummaryPhaseJSON, number>;
    for (const p of PHASES) if (p.summary_field) times[p.json as SummaryPhaseJSON] = p50(p.json);
    this.draw({ ...times, new_conn: times.connect_ms > 0, handshake: hs }, sc);
    this.root.dataset.state = "ready";
  }

  // ask has the block's widget run the model with the controls' values.
  private ask(): void {
    this.pending++;
    this.root.dataset.state = "running";
    this.status.textContent = this.S.fig_running;
    document.dispatchEvent(new CustomEvent("connlab:run", {
      detail: { block: this.block, params: { rtt: this.rtt.value + "ms", tls: this.tls.value }, mode: "model" },
    }));
  }

  private draw(c: CallTimes, sc: Scenario): void {
    const S = this.S;
    const ps = ladderPackets(c, sc, S);
    const end = Math.max(c.total_ms, ...ps.map((p) => p.t1));
    const W = 680, top = 34, H = 520, xc = 200, xs = W - 120;
    const y = (t: number) => top + (end > 0 ? (t / end) * H : 0);
    const root = svg("svg", { viewBox: `0 0 ${W} ${top + H + 24}`, class: "ladder-svg", role: "img" });
    const defs = svg("defs", {});
    const marker = svg("marker", { id: "arrow-" + this.block, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "context-stroke" }));
    defs.append(marker);
    root.append(defs);
    root.append(svg("text", { x: xc, y: 16, class: "lane", "text-anchor": "middle" }, S.fig_client));
    root.append(svg("text", { x: xs, y: 16, class: "lane", "text-anchor": "middle" }, S.fig_server));
    root.append(svg("line", { x1: xc, y1: top - 6, x2: xc, y2: top + H + 6, class: "lifeline" }));
    root.append(svg("line", { x1: xs, y1: top - 6, x2: xs, y2: top + H + 6, class: "lifeline" }));
    // The phases' ends on the client's side, as curl names them.
    const marks: [string, number][] = [];
    for (const p of PHASES) {
      if (p.curl && ladderMarks[p.json as PhaseJSON]?.(c)) marks.push([p.curl, c[p.json as SummaryPhaseJSON]]);
    }
    let lastY = -99;
    for (const [name, t] of marks) {
      const yy = y(t);
      root.append(svg("line", { x1: xc - 8, y1: yy, x2: xc, y2: yy, class: "tick" }));
      const ly = Math.max(yy + 4, lastY + 12);
      lastY = ly;
      root.append(svg("text", { x: xc - 12, y: ly, class: "mark", "text-anchor": "end" }, `${name} ${nf.format(t)} ms`));
    }
    if (c.new_conn && c.namelookup_ms > 0) {
      root.append(svg("rect", { x: xc - 3, y: y(0), width: 6, height: Math.max(1, y(c.namelookup_ms) - y(0)), class: "dns" }));
      root.append(svg("text", { x: xc + 8, y: y(c.namelookup_ms / 2) + 4, class: "note" }, S.fig_dns));
    }
    // The server's work: from the request's arrival to the answer's first bytes.
    const req = ps.find((p) => p.kind === "http" && p.from === "c");
    const resp = ps.find((p) => p.kind === "http" && p.from === "s");
    if (req && resp && resp.t0 - req.t1 > 0.02 * end) {
      root.append(svg("rect", { x: xs - 3, y: y(req.t1), width: 6, height: y(resp.t0) - y(req.t1), class: "work" }));
      root.append(svg("text", { x: xs + 8, y: (y(req.t1) + y(resp.t0)) / 2 + 4, class: "note" }, S.fig_work));
    }
    const counts: Record<string, number> = { tcp: 0, tls: 0, http: 0, data: 0, fin: 0 };
    let prev: Packet | null = null;
    let prevText: SVGElement | null = null;
    for (const p of ps) {
      counts[p.kind]++;
      // Two packets sent together on one path (TCP's ACK and the
      // ClientHello) share an arrow.
      if (prev && prevText && prev.from === p.from && prev.t0 === p.t0 && prev.t1 === p.t1) {
        prevText.textContent += " + " + p.label;
        continue;
      }
      const [x1, x2] = p.from === "c" ? [xc, xs] : [xs, xc];
      const g = svg("g", { class: "pkt " + p.kind, "data-kind": p.kind });
      g.append(svg("line", { x1, y1: y(p.t0), x2, y2: y(p.t1), "marker-end": `url(#arrow-${this.block})` }));
      const mx = (x1 + x2) / 2, my = (y(p.t0) + y(p.t1)) / 2;
      const angle = (Math.atan2(y(p.t1) - y(p.t0), x2 - x1) * 180) / Math.PI;
      const rot = angle > 90 || angle < -90 ? angle + 180 : angle;
      prevText = svg("text", { x: mx, y: my - 4, "text-anchor": "middle", transform: `rotate(${rot} ${mx} ${my})` }, p.label);
      g.append(prevText);
      root.append(g);
      prev = p;
    }
    if (sc.reuse === "none") {
      const x = sc.closer === "server" ? xs : xc;
      root.append(svg("rect", { x: x - 3, y: y(c.total_ms + sc.rtt), width: 6, height: Math.max(4, top + H - y(c.total_ms + sc.rtt)), class: "tw" }));
      root.append(svg("text", { x: x + 8, y: top + H + 16, class: "note" }, S.fig_time_wait));
    }
    const n = ps.length;
    root.setAttribute("aria-label", fill(S.fig_ladder_label, { n, ms: nf.format(c.total_ms) }));
    this.pic.replaceChildren(root);
    const r = this.root.dataset;
    r.rtt = String(sc.rtt);
    r.tls = sc.tls;
    r.handshake = c.handshake;
    r.marks = marks.map(([name]) => name).join(" ");
    r.total = String(c.total_ms);
    r.packets = String(n);
    r.tcp = String(counts.tcp);
    r.tlsFlights = String(counts.tls);
  }
}
