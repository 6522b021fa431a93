// The connection timeline: each socket's life on one row (opened, in use,
// idle in a cache, closed by the client or the server, TIME_WAIT until it
// expires), with EADDRNOTAVAIL marks on top. With more sockets than rows can
// show, it draws how many sockets are open and in TIME_WAIT over time
// against the local port range instead: the port-exhaustion gauge.
import { ERROR, INK3, GRID, Width, el, setHeight, hatch, rowsTitle, setup, xAxis, yAxis } from "./canvas";
import type { PaneChartKind, Tip } from "./chart";
import type { Sock, VariantData } from "./store";
import type { Sample } from "./types";
import { t, ms, int } from "./i18n";
import { esc } from "./waterfall";

export const SOCK = {
  busy: "#1f78d1",
  idle: "#b8c4d0",
  client: "#e8710a",
  server: "#6a3fc1",
  tw: "#c48a00",
  twServer: "#7e57c2",
  portError: ERROR,
};

const MAX_ROWS = 150; // sockets drawn one per row; above, the gauge
const MAX_VIEW = 240;
const AXIS_H = 48;

// timelineChart is the connection timeline in each variant's pane, under
// its waterfall. Every pane spans the same rows and the same run time.
export const timelineChart: PaneChartKind = {
  make({ data, tip }) {
    const tl = new Timeline(tip, data.port_count);
    return {
      nodes: [el("p", "sim-sub", t("w_connections")), tl.root],
      render(d, f) {
        let rows = 0;
        let gauge = 0;
        for (const v of f.vs) {
          rows = Math.max(rows, v.callEnd, v.sockEnd);
          gauge = Math.max(gauge, v.tEnd, v.series && v.series.length ? v.series[v.series.length - 1].t_s * 1000 : 0);
        }
        tl.render(d, (rows || 1) * 1.04, gauge || 1);
      },
    };
  },
  legend: () => [
    { color: SOCK.busy, label: t("st_busy") },
    { color: SOCK.idle, label: t("st_idle") },
    { color: SOCK.client, label: t("st_close_client") },
    { color: SOCK.server, label: t("st_close_server") },
    { color: SOCK.tw, label: t("st_time_wait"), cls: "hatch" },
    { color: SOCK.twServer, label: t("st_time_wait_server"), cls: "hatch" },
    { color: SOCK.portError, label: t("st_port_error") },
  ],
};

export class Timeline {
  root = el("div", "sim-tl");
  private scroll = el("div", "sim-tl-scroll");
  private canvas = el("canvas", "sim-tl-rows");
  private spacer = el("div", "sim-tl-spacer");
  private axis = el("canvas", "sim-tl-axis");
  private data: VariantData | null = null;
  private hi = 1;
  private rowH = 16;
  private gauge = false;
  private left = 44;
  private width: Width;

  constructor(private tip: Tip, private portRange: number) {
    this.canvas.setAttribute("role", "img");
    this.scroll.append(this.canvas, this.spacer);
    this.root.append(this.scroll, this.axis);
    this.scroll.addEventListener("scroll", () => this.draw(), { passive: true });
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => this.tip(null));
    this.width = new Width(this.root, () => this.draw());
  }

  // render draws d over [0, hiRows] ms of run time as rows (TIME_WAIT that
  // lasts longer runs off the right edge), or over [0, hiGauge] as the gauge.
  render(d: VariantData, hiRows: number, hiGauge: number): void {
    this.data = d;
    const n = d.socks.length;
    // The gauge when there are too many sockets for rows, or when the
    // events were cut short and a complete time series is at hand.
    this.gauge = n > MAX_ROWS || (d.truncated > 0 && !!d.series && d.series.length > 1) || (n === 0 && !!d.series && d.series.length > 1);
    const room = Math.max(n, d.expectSocks);
    if (!this.gauge && room > MAX_ROWS && n === 0) this.gauge = true; // the run will need the gauge
    this.hi = this.gauge ? hiGauge : hiRows;
    this.rowH = room <= 12 ? 16 : room <= 40 ? 9 : 4;
    this.left = this.gauge ? 62 : 44;
    const view = this.gauge ? 170 : room === 0 ? 48 : Math.min(14 + room * this.rowH, MAX_VIEW);
    setHeight(this.scroll, view);
    setHeight(this.spacer, this.gauge ? 0 : Math.max(0, 14 + n * this.rowH - view));
    this.root.dataset.sockets = String(n);
    this.root.dataset.view = this.gauge ? "gauge" : "rows";
    this.canvas.setAttribute("aria-label", t("w_connections") + ": " + int(n));
    this.draw();
  }

  private xOf(v: number, w: number): number {
    return this.left + (v / (this.hi || 1)) * (w - this.left - 10);
  }

  draw(): void {
    const d = this.data;
    if (!d) return;
    const w = this.width.get();
    if (!w) return; // drawn when the ResizeObserver reports
    const view = parseFloat(this.scroll.style.height) || 48;
    const ctx = setup(this.canvas, w, view);
    if (this.gauge) this.drawGauge(ctx, d, w, view);
    else this.drawRows(ctx, d, w, view);
    const ax = setup(this.axis, w, AXIS_H);
    xAxis(ax, this.left, w - 10, 1, 0, this.hi, t("w_x_run"));
    if (!this.gauge) rowsTitle(ax, t("w_y_conns"), 1);
  }

  private drawRows(ctx: CanvasRenderingContext2D, d: VariantData, w: number, view: number): void {
    const top = this.scroll.scrollTop;
    const rh = this.rowH;
    // Port errors: a strip of red ticks above the rows.
    ctx.fillStyle = SOCK.portError;
    for (const at of d.portErrors) ctx.fillRect(this.xOf(at, w), 2 - top, 1.5, 8);
    if (d.socks.length === 0 && d.portErrors.length === 0) {
      ctx.fillStyle = INK3;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillText(t("w_no_calls"), w / 2, view / 2);
      return;
    }
    const first = Math.max(0, Math.floor((top - 14) / rh));
    const last = Math.min(d.socks.length, Math.ceil((top + view) / rh) + 1);
    const now = d.tEnd;
    const barH = rh >= 9 ? rh - 4 : Math.max(1, rh - 1);
    ctx.textBaseline = "middle";
    for (let i = first; i < last; i++) {
      const s = d.socks[i];
      const y = 14 + i * rh - top + (rh - barH) / 2;
      if (rh >= 14) {
        ctx.fillStyle = INK3;
        ctx.textAlign = "right";
        ctx.fillText("c" + s.id, this.left - 6, y + barH / 2);
      }
      this.drawSock(ctx, s, y, barH, w, now);
    }
  }

  private drawSock(ctx: CanvasRenderingContext2D, s: Sock, y: number, h: number, w: number, now: number): void {
    const end = s.close >= 0 ? s.close : now;
    const x0 = this.xOf(s.open, w);
    const x1 = Math.max(x0 + 1, this.xOf(end, w));
    // Open and idle: a thin line; in use: a full bar.
    ctx.fillStyle = SOCK.idle;
    ctx.fillRect(x0, y + h * 0.3, x1 - x0, Math.max(1, h * 0.4));
    ctx.fillStyle = SOCK.busy;
    for (let k = 0; k < s.busy.length; k += 2) {
      const a = this.xOf(s.busy[k], w);
      ctx.fillRect(a, y, Math.max(1, this.xOf(s.busy[k + 1], w) - a), h);
    }
    if (s.close >= 0) {
      ctx.fillStyle = s.closeBy === "server" ? SOCK.server : SOCK.client;
      ctx.fillRect(x1 - 1, y - 1, 2.5, h + 2);
    }
    if (s.tw >= 0) {
      const a = this.xOf(s.tw, w);
      const endT = s.twEnd >= 0 ? s.twEnd : now;
      const edge = w - 10;
      const b = Math.min(edge, Math.max(a + 1, this.xOf(endT, w)));
      const color = s.twBy === "server" ? SOCK.twServer : SOCK.tw;
      ctx.fillStyle = h >= 6 ? hatch(ctx, color) : color + "88";
      ctx.fillRect(a + 1.5, y, b - a - 1.5, h);
      if (endT > this.hi && h >= 6) {
        // TIME_WAIT goes on past the chart's edge (60 s on Linux).
        ctx.fillStyle = color;
        ctx.beginPath();
        ctx.moveTo(edge, y - 1);
        ctx.lineTo(edge + 6, y + h / 2);
        ctx.lineTo(edge, y + h + 1);
        ctx.fill();
      }
    }
  }

  // drawGauge: sockets open and in TIME_WAIT over time, stacked, against the
  // port range; EADDRNOTAVAIL per time slice as red bars along the bottom.
  private drawGauge(ctx: CanvasRenderingContext2D, d: VariantData, w: number, view: number): void {
    const bins = Math.max(20, Math.floor(w - this.left - 10) >> 1);
    const open = new Float64Array(bins);
    const tw = new Float64Array(bins);
    const stw = new Float64Array(bins);
    const perr = new Float64Array(bins);
    const dt = (this.hi || 1) / bins;
    const series = d.series && d.series.length > 1 && (d.truncated > 0 || d.socks.length === 0) ? d.series : null;
    if (series) this.binSeries(series, open, tw, stw, perr, dt);
    else this.binEvents(d, open, tw, stw, perr, dt);
    let max = 1;
    let emax = 0;
    for (let i = 0; i < bins; i++) {
      max = Math.max(max, open[i] + tw[i] + stw[i]);
      emax = Math.max(emax, perr[i]);
    }
    const showRange = this.portRange > 0 && max > this.portRange * 0.5;
    if (showRange) max = Math.max(max, this.portRange * 1.05);
    const top = 8;
    const bottom = view - 4;
    const yOf = (v: number) => bottom - (v / max) * (bottom - top);
    const kilo = max >= 10000;
    yAxis(ctx, this.left, top, bottom, 0, max, t("w_y_sockets"), w - 10, (v) => (kilo && v > 0 ? int(v / 1000) + "k" : int(v)), true);
    const bw = (w - this.left - 10) / bins;
    const stack = (vals: Float64Array[], color: string | CanvasPattern) => {
      ctx.fillStyle = color;
      for (let i = 0; i < bins; i++) {
        let lo = 0;
        for (let k = 0; k < vals.length - 1; k++) lo += vals[k][i];
        const hi = lo + vals[vals.length - 1][i];
        if (hi <= lo) continue;
        const x = this.left + i * bw;
        ctx.fillRect(x, yOf(hi), bw + 0.5, yOf(lo) - yOf(hi));
      }
    };
    stack([open], SOCK.busy);
    stack([open, tw], hatch(ctx, SOCK.tw));
    stack([open, tw, stw], hatch(ctx, SOCK.twServer));
    if (emax > 0) {
      ctx.fillStyle = SOCK.portError;
      for (let i = 0; i < bins; i++) {
        if (perr[i] > 0) ctx.fillRect(this.left + i * bw, bottom - 6, bw + 0.5, 6);
      }
    }
    if (showRange) {
      const y = Math.round(yOf(this.portRange)) + 0.5;
      ctx.strokeStyle = SOCK.portError;
      ctx.setLineDash([5, 4]);
      ctx.beginPath();
      ctx.moveTo(this.left, y);
      ctx.lineTo(w - 10, y);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = SOCK.portError;
      ctx.textAlign = "right";
      ctx.textBaseline = "bottom";
      ctx.fillText(t("st_ports") + " " + int(this.portRange), w - 12, y - 2);
    }
    ctx.strokeStyle = GRID;
  }

  private binEvents(d: VariantData, open: Float64Array, tw: Float64Array, stw: Float64Array, perr: Float64Array, dt: number): void {
    const n = open.length;
    const acc = (arr: Float64Array, a: number, b: number) => {
      // Adds 1 over [a, b) with a difference array, finished below.
      const i = Math.max(0, Math.floor(a / dt));
      const j = Math.min(n, Math.floor(b / dt));
      if (i < n) arr[i] += 1;
      if (j < n && j >= i) arr[j] -= 1;
    };
    const now = d.tEnd;
    for (const s of d.socks) {
      acc(open, s.open, s.close >= 0 ? s.close : now);
      if (s.tw >= 0) acc(s.twBy === "server" ? stw : tw, s.tw, s.twEnd >= 0 ? s.twEnd : now);
    }
    for (const arr of [open, tw, stw]) for (let i = 1; i < n; i++) arr[i] += arr[i - 1];
    for (const at of d.portErrors) {
      const i = Math.floor(at / dt);
      if (i >= 0 && i < n) perr[i]++;
    }
  }

  private binSeries(series: Sample[], open: Float64Array, tw: Float64Array, stw: Float64Array, perr: Float64Array, dt: number): void {
    const n = open.length;
    let k = 0;
    for (let i = 0; i < n; i++) {
      const tMs = (i + 0.5) * dt;
      while (k < series.length - 1 && series[k].t_s * 1000 < tMs) k++;
      const s = series[k];
      if (s.t_s * 1000 + 1e-9 < tMs && k === series.length - 1) continue;
      open[i] = s.open;
      tw[i] = s.time_wait;
      stw[i] = s.server_time_wait;
      perr[i] = s.errors;
    }
  }

  private hover(e: MouseEvent): void {
    const d = this.data;
    if (!d || this.gauge) {
      this.tip(null);
      return;
    }
    const r = this.canvas.getBoundingClientRect();
    const i = Math.floor((e.clientY - r.top + this.scroll.scrollTop - 14) / this.rowH);
    const s = d.socks[i];
    if (!s) {
      this.tip(null);
      return;
    }
    let h = `<strong>c${s.id}</strong>${s.port ? " · port " + s.port : ""}${s.worker ? " · worker " + s.worker : ""}<table>`;
    h += `<tr><td><i style="background:${SOCK.busy}"></i>${esc(t("st_open"))}</td><td>${ms(s.open)}</td></tr>`;
    h += `<tr><td>${esc(t("m_calls"))}</td><td>${s.busy.length / 2}</td></tr>`;
    if (s.close >= 0) {
      const who = s.closeBy === "server" ? "st_close_server" : "st_close_client";
      h += `<tr><td><i style="background:${s.closeBy === "server" ? SOCK.server : SOCK.client}"></i>${esc(t(who))}</td><td>${ms(s.close)}</td></tr>`;
      if (s.reason) h += `<tr><td colspan="2" class="dim">${esc(s.reason)}</td></tr>`;
    }
    if (s.tw >= 0) {
      const key = s.twBy === "server" ? "st_time_wait_server" : "st_time_wait";
      h += `<tr><td><i style="background:${s.twBy === "server" ? SOCK.twServer : SOCK.tw}"></i>${esc(t(key))}</td><td>${s.twEnd >= 0 ? ms(s.twEnd - s.tw) : "…"}</td></tr>`;
    }
    this.tip(h + "</table>", e);
  }
}
