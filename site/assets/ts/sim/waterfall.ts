// The waterfall: one row per call, in start order, coloured by phase as in
// Chrome DevTools (queueing, DNS, initial connection, TLS, waiting, content
// download: sim/phase.go's table, PHASES), with the connection id beside
// each row. A call on a reused connection has no setup phases (DNS,
// connect, TLS), so it is visibly short.
// Rows are drawn on a canvas, only those in view, so 20,000 rows scroll.
import { ERROR, INK, INK3, Width, el, setHeight, rowsTitle, setup, xAxis } from "./canvas";
import type { PaneChartKind, Tip } from "./chart";
import { PHASES } from "./schema.gen";
import type { Call, VariantData } from "./store";
import { t, ms, int } from "./i18n";

export interface XRange { lo: number; hi: number; aligned: boolean }

const MAX_VIEW = 300; // px of rows before the waterfall scrolls
const AXIS_H = 48;

export function rowHeight(n: number): number {
  return n <= 16 ? 20 : n <= 40 ? 14 : n <= 120 ? 6 : 3;
}

// waterfallChart is the waterfall in each variant's pane, under its title.
// Every pane spans the same time: the longest run's (with Align, the
// longest call's).
export const waterfallChart: PaneChartKind = {
  make({ tip }) {
    const wf = new Waterfall(tip);
    return {
      nodes: [el("p", "sim-sub", t("w_waterfall")), wf.root],
      render(d, f) {
        let hi = 0;
        for (const v of f.vs) hi = Math.max(hi, f.aligned ? v.maxTotal : v.callEnd);
        wf.render(d, { lo: 0, hi: (hi || 1) * 1.02, aligned: f.aligned });
      },
    };
  },
  legend: () => [...PHASES.map((p) => ({ color: p.color, label: t(p.label) })), { color: ERROR, label: t("w_error_calls") }],
};

export class Waterfall {
  root = el("div", "sim-wf");
  private scroll = el("div", "sim-wf-scroll");
  private canvas = el("canvas", "sim-wf-rows");
  private spacer = el("div", "sim-wf-spacer");
  private axis = el("canvas", "sim-wf-axis");
  private data: VariantData | null = null;
  private x: XRange = { lo: 0, hi: 1, aligned: false };
  private rowH = 20;
  private gutter = 64;
  private width: Width;

  constructor(private tip: Tip) {
    this.canvas.setAttribute("role", "img");
    this.scroll.append(this.canvas, this.spacer);
    this.root.append(this.scroll, this.axis);
    this.scroll.addEventListener("scroll", () => this.draw(), { passive: true });
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => this.tip(null));
    this.width = new Width(this.root, () => this.draw());
  }

  render(d: VariantData, x: XRange): void {
    this.data = d;
    this.x = x;
    const n = d.calls.length;
    const room = Math.max(n, d.expectCalls);
    this.rowH = rowHeight(room);
    const view = room === 0 ? 48 : Math.max(Math.min(room * this.rowH, MAX_VIEW), 20);
    setHeight(this.scroll, view);
    setHeight(this.spacer, Math.max(0, n * this.rowH - view));
    this.canvas.setAttribute("aria-label", t("w_waterfall") + ": " + int(n) + " " + t("m_calls"));
    this.root.dataset.rows = String(n);
    this.draw();
  }

  private xOf(v: number, w: number): number {
    const { lo, hi } = this.x;
    return this.gutter + ((v - lo) / (hi - lo || 1)) * (w - this.gutter - 10);
  }

  draw(): void {
    const d = this.data;
    if (!d) return;
    const w = this.width.get();
    if (!w) return; // drawn when the ResizeObserver reports
    const view = parseFloat(this.scroll.style.height) || 48;
    const ctx = setup(this.canvas, w, view);
    const calls = d.calls;
    const rh = this.rowH;
    this.gutter = rh >= 14 ? this.labelWidth(ctx, calls) : 10;
    if (calls.length === 0) {
      ctx.fillStyle = INK3;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillText(t("w_no_calls"), w / 2, view / 2);
    }
    const top = this.scroll.scrollTop;
    const first = Math.max(0, Math.floor(top / rh));
    const last = Math.min(calls.length, Math.ceil((top + view) / rh) + 1);
    const barH = rh >= 12 ? rh - 6 : Math.max(1, rh - 1);
    // Vertical grid from the axis ticks is drawn by the axis canvas; here a
    // light band on alternate rows when rows are tall enough to read.
    for (let i = first; i < last; i++) {
      const c = calls[i];
      const y = i * rh - top;
      if (rh >= 14 && i % 2 === 1) {
        ctx.fillStyle = "#f7f8fa";
        ctx.fillRect(0, y, w, rh);
      }
      this.drawRow(ctx, c, y + (rh - barH) / 2, barH, w);
      if (rh >= 14) this.label(ctx, c, y + rh / 2, w);
      else if (c.newConn) {
        ctx.fillStyle = NEW_CONN;
        ctx.fillRect(0, y, 3, Math.max(1, rh - 1));
      }
    }
    const ax = setup(this.axis, w, AXIS_H);
    xAxis(ax, this.gutter, w - 10, 1, this.x.lo, this.x.hi, this.x.aligned ? t("w_x_call") : t("w_x_run"));
    rowsTitle(ax, t("w_y_calls"), 1);
  }

  // labelWidth is the room the row labels need: "#12.3" and "● c7".
  private labelWidth(ctx: CanvasRenderingContext2D, calls: Call[]): number {
    let req = 0;
    let call = 0;
    let conn = 0;
    for (const c of calls) {
      req = Math.max(req, c.req);
      call = Math.max(call, c.call);
      conn = Math.max(conn, c.conn);
    }
    const a = Math.max(textWidth(ctx, "p50"), textWidth(ctx, "#" + req + (call > 1 ? "." + call : "")));
    const b = conn ? textWidth(ctx, "● c" + conn) : 0;
    return Math.ceil(4 + a + 8 + b + 8);
  }

  private drawRow(ctx: CanvasRenderingContext2D, c: Call, y: number, h: number, w: number): void {
    const t0 = this.x.aligned ? 0 : c.start;
    const seg = (from: number, to: number, color: string) => {
      if (to <= from) return;
      const a = this.xOf(t0 + from, w);
      const b = Math.max(a + 1, this.xOf(t0 + to, w));
      ctx.fillStyle = color;
      ctx.fillRect(a, y, b - a, h);
    };
    if (c.error) {
      seg(0, Math.max(c.total, 0.0001), ERROR);
      return;
    }
    for (const s of segments(c)) seg(s.from, s.to, s.color);
    if (c.retried) {
      ctx.fillStyle = ERROR;
      ctx.fillRect(this.xOf(t0, w) - 3, y, 2, h);
    }
  }

  private label(ctx: CanvasRenderingContext2D, c: Call, y: number, w: number): void {
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    ctx.fillStyle = INK;
    ctx.fillText(c.req ? "#" + c.req + (c.call > 1 ? "." + c.call : "") : "p50", 4, y);
    if (c.conn) {
      ctx.textAlign = "right";
      ctx.fillStyle = c.newConn ? "#a86a00" : INK3;
      ctx.fillText((c.newConn ? "● " : "") + "c" + c.conn, this.gutter - 6, y);
    }
    const end = this.xOf((this.x.aligned ? 0 : c.start) + c.total, w);
    const label = c.error ? "✕" : ms(c.total);
    ctx.textAlign = "left";
    ctx.fillStyle = c.error ? ERROR : INK3;
    const tw = textWidth(ctx, label);
    if (end + 4 + tw < w) ctx.fillText(label, end + 4, y);
  }

  private hover(e: MouseEvent): void {
    const d = this.data;
    if (!d) return;
    const r = this.canvas.getBoundingClientRect();
    const i = Math.floor((e.clientY - r.top + this.scroll.scrollTop) / this.rowH);
    const c = d.calls[i];
    if (!c) {
      this.tip(null);
      return;
    }
    this.tip(callTip(c), e);
  }
}

// textWidth is ctx.measureText(s).width, remembered per font: every
// drawing measures the same few labels again on each row, and measureText
// is slow (a font lookup for each call).
const widths = new Map<string, number>();
function textWidth(ctx: CanvasRenderingContext2D, s: string): number {
  const key = ctx.font + "\n" + s;
  let w = widths.get(key);
  if (w === undefined) {
    if (widths.size >= 4096) widths.clear();
    w = ctx.measureText(s).width;
    widths.set(key, w);
  }
  return w;
}

// The colour of the mark of a call that opened a connection, in rows too
// thin for labels: the connect phase's.
const NEW_CONN = PHASES.find((p) => p.key === "connect")?.color || INK;

// A Segment is the part of a call one phase took, from and to ms from the
// call's start.
interface Segment { from: number; to: number; color: string; label: string }

// segments cuts a call into its phases' parts, in order: each phase's time
// is cumulative, so its part runs from the latest earlier time to its own
// (none when a phase did not happen, such as TLS on plain TCP). A call on a
// reused connection skips the setup phases; a failed call has no phases
// after its setup.
export function segments(c: Call): Segment[] {
  const out: Segment[] = [];
  let from = 0;
  let setupSeen = false;
  PHASES.forEach((p, i) => {
    if (p.setup) setupSeen = true;
    if (p.setup && !c.newConn) return;
    if (c.error && !p.setup && setupSeen) return;
    const to = c.t[i];
    if (to > from) {
      out.push({ from, to, color: p.color, label: p.label });
      from = to;
    }
  });
  return out;
}

// callTip is the tooltip of one call: its phases as DevTools' Timing tab
// lists them, and curl's cumulative times.
export function callTip(c: Call): string {
  const head = (c.req ? "#" + c.req + (c.call > 1 ? "." + c.call : "") : t("w_median")) + (c.worker ? " · worker " + c.worker : "") +
    (c.conn ? " · c" + c.conn : "");
  const kind = c.error ? `<span class="bad">${esc(c.error)}</span>` :
    c.newConn ? t("w_new_conn") + (c.handshake ? " · " + t("w_handshake") + ": " + esc(c.handshake) : "") : t("w_reused");
  let h = `<strong>${esc(head)}</strong><br>${kind}${c.retried ? "<br>" + esc(t("w_retried")) : ""}<table>`;
  for (const s of segments(c)) h += `<tr><td><i style="background:${s.color}"></i>${esc(t(s.label))}</td><td>${ms(s.to - s.from)}</td></tr>`;
  h += `<tr class="total"><td>${esc(t("ph_total"))}</td><td>${ms(c.total)}</td></tr></table>`;
  return h;
}

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);
}
