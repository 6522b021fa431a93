// Canvas helpers shared by the charts: crisp drawing on any pixel ratio,
// "nice" ticks, time labels with units, and axes with titles.
import { num, t } from "./i18n";

export const FONT = '11px system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK KR", sans-serif';
export const INK = "#3d4a57";
export const INK3 = "#6b7785";
export const GRID = "#e6eaef";

// The colour of failed calls and port errors. The phases' colours are in
// the phase table (schema.gen.ts: PHASES).
export const ERROR = "#d93025";

// Variant colours for charts that overlay variants.
export const VARIANT = ["#1f78d1", "#e8710a", "#2e9d5b", "#b04fc9", "#c0392b", "#00897b", "#6d4c41", "#546e7a"];

// setup sizes canvas to w×h CSS pixels at the device's pixel ratio and
// returns a context scaled to CSS pixels.
export function setup(canvas: HTMLCanvasElement, w: number, h: number): CanvasRenderingContext2D {
  const r = Math.min(window.devicePixelRatio || 1, 3);
  const W = Math.max(1, Math.round(w * r));
  const H = Math.max(1, Math.round(h * r));
  const ctx = canvas.getContext("2d")!;
  if (canvas.width !== W || canvas.height !== H || !canvas.dataset.size) {
    // Resizing resets the context; its transform and font are set again
    // only then: setting a font resolves styles, which costs a style
    // recalculation of the page each time.
    canvas.width = W;
    canvas.height = H;
    canvas.dataset.size = w + "x" + h;
    canvas.style.width = w + "px";
    canvas.style.height = h + "px";
    ctx.setTransform(r, 0, 0, r, 0, 0);
    ctx.font = FONT;
  }
  ctx.clearRect(0, 0, w, h);
  return ctx;
}

// ticks returns about n round values covering [lo, hi].
export function ticks(lo: number, hi: number, n: number): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, n);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / p;
  const step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

// TimeUnit picks the unit a time axis labels in, from its span in ms.
export interface TimeUnit { div: number; unit: string }
export function timeUnit(spanMs: number): TimeUnit {
  if (spanMs >= 2 * 86400000) return { div: 86400000, unit: t("unit_d") };
  if (spanMs >= 2 * 3600000) return { div: 3600000, unit: t("unit_h") };
  if (spanMs >= 20 * 60000) return { div: 60000, unit: t("unit_min") };
  if (spanMs >= 20000) return { div: 1000, unit: t("unit_s") };
  return { div: 1, unit: t("unit_ms") };
}

// fmtTick labels a tick of a time axis in unit u.
export function fmtTick(v: number, u: TimeUnit): string {
  return num(v / u.div, 3);
}

// xAxis draws a horizontal time axis at y from x0 to x1 for [0, span] ms.
export function xAxis(ctx: CanvasRenderingContext2D, x0: number, x1: number, y: number, lo: number, hi: number, title: string, gridTop?: number): void {
  const u = timeUnit(hi - lo);
  const w = x1 - x0;
  const ts = ticks(lo / u.div, hi / u.div, Math.max(2, Math.floor(w / 70)));
  ctx.strokeStyle = INK3;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(x0, y + 0.5);
  ctx.lineTo(x1, y + 0.5);
  ctx.stroke();
  ctx.fillStyle = INK;
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const v of ts) {
    const x = x0 + ((v * u.div - lo) / (hi - lo || 1)) * w;
    if (x < x0 - 1 || x > x1 + 1) continue;
    if (gridTop !== undefined) {
      ctx.strokeStyle = GRID;
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, gridTop);
      ctx.lineTo(Math.round(x) + 0.5, y);
      ctx.stroke();
    }
    ctx.strokeStyle = INK3;
    ctx.beginPath();
    ctx.moveTo(Math.round(x) + 0.5, y);
    ctx.lineTo(Math.round(x) + 0.5, y + 4);
    ctx.stroke();
    ctx.fillText(num(v, 3), x, y + 6);
  }
  ctx.fillStyle = INK3;
  ctx.textAlign = "right";
  ctx.fillText(title + " (" + u.unit + ")", x1, y + 20);
}

// rowsTitle names, under a chart's left edge, what its rows are.
export function rowsTitle(ctx: CanvasRenderingContext2D, text: string, y: number): void {
  ctx.fillStyle = INK3;
  ctx.textAlign = "left";
  ctx.textBaseline = "top";
  ctx.fillText("↕ " + text, 2, y + 33);
}

// yAxis draws a vertical count axis at x from y1 (bottom, value lo) to y0.
export function yAxis(ctx: CanvasRenderingContext2D, x: number, y0: number, y1: number, lo: number, hi: number, title: string, gridRight?: number, fmt?: (v: number) => string, whole = false): void {
  const h = y1 - y0;
  let ts = ticks(lo, hi, Math.max(2, Math.floor(h / 28)));
  if (whole) ts = ts.filter((v) => Number.isInteger(v));
  ctx.strokeStyle = INK3;
  ctx.beginPath();
  ctx.moveTo(x + 0.5, y0);
  ctx.lineTo(x + 0.5, y1);
  ctx.stroke();
  ctx.fillStyle = INK;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const v of ts) {
    const y = y1 - ((v - lo) / (hi - lo || 1)) * h;
    if (gridRight !== undefined) {
      ctx.strokeStyle = GRID;
      ctx.beginPath();
      ctx.moveTo(x, Math.round(y) + 0.5);
      ctx.lineTo(gridRight, Math.round(y) + 0.5);
      ctx.stroke();
    }
    ctx.fillText(fmt ? fmt(v) : num(v, 2), x - 4, y);
  }
  ctx.save();
  ctx.translate(x - 46, (y0 + y1) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillStyle = INK3;
  ctx.fillText(title, 0, 0);
  ctx.restore();
}

// hatch returns a diagonal-stripe pattern (TIME_WAIT).
const patterns = new Map<string, CanvasPattern | null>();
export function hatch(ctx: CanvasRenderingContext2D, color: string): CanvasPattern | string {
  const key = color;
  if (!patterns.has(key)) {
    const c = document.createElement("canvas");
    c.width = c.height = 6;
    const g = c.getContext("2d")!;
    g.fillStyle = color + "33";
    g.fillRect(0, 0, 6, 6);
    g.strokeStyle = color;
    g.lineWidth = 1.2;
    g.beginPath();
    g.moveTo(0, 6);
    g.lineTo(6, 0);
    g.stroke();
    patterns.set(key, ctx.createPattern(c, "repeat"));
  }
  return patterns.get(key) || color;
}

// Width tracks an element's content width with a ResizeObserver, so that
// drawing never reads layout: a forced layout per chart is what makes a
// long page stutter under a fast stream. Until the observer reports, a
// chart on the page takes the width the last chart of its kind had, or is
// not drawn: the observer's first report, right after layout, draws it.
//
// A chart is drawn only once its widget (its figure) has come near the
// viewport, or before printing: a lab page opens with the build-time
// results of every block, and drawing the charts out of view took the
// page's thread while the block in view waited for its first run.
export class Width {
  private static hint = new Map<string, number>();
  // The figures that have come near the viewport, and the charts on the
  // page that wait for theirs (an IntersectionObserver on each figure).
  private static seen = new WeakSet<Element>();
  private static waiting = new Map<Element, Set<Width>>();
  private static near: IntersectionObserver | null = null;
  value = 0;
  private shown = typeof IntersectionObserver === "undefined";
  constructor(
    private target: HTMLElement,
    private onChange: () => void,
  ) {
    new ResizeObserver((entries) => {
      const w = Math.floor(entries[entries.length - 1].contentRect.width);
      if (w > 0) Width.hint.set(target.className, w);
      if (w !== this.value) {
        this.value = w;
        if (this.isShown()) onChange();
      }
    }).observe(target);
  }
  get(): number {
    if (!this.isShown()) return 0;
    return this.value || Width.hint.get(this.target.className) || 0;
  }

  // isShown reports whether the chart may draw. A chart not on the page yet
  // waits for the observer's report that it is laid out.
  private isShown(): boolean {
    if (this.shown || !this.target.isConnected) return this.shown;
    const fig = this.target.closest("figure");
    if (!fig || Width.seen.has(fig)) this.shown = true;
    else Width.wait(fig, this);
    return this.shown;
  }

  private static wait(fig: Element, w: Width): void {
    if (!Width.near) {
      Width.near = new IntersectionObserver(
        (entries) => {
          for (const e of entries) if (e.isIntersecting) Width.reveal(e.target);
        },
        { rootMargin: "300px 0px" },
      );
      // A printed page shows every chart.
      window.addEventListener("beforeprint", () => {
        for (const f of [...Width.waiting.keys()]) Width.reveal(f);
      });
    }
    let set = Width.waiting.get(fig);
    if (!set) {
      set = new Set();
      Width.waiting.set(fig, set);
      Width.near.observe(fig);
    }
    // A run replaces its widget's charts: the old ones are off the page.
    for (const x of set) if (!x.target.isConnected) set.delete(x);
    set.add(w);
  }

  // reveal draws the charts that waited for a figure.
  private static reveal(fig: Element): void {
    Width.seen.add(fig);
    Width.near?.unobserve(fig);
    const set = Width.waiting.get(fig);
    Width.waiting.delete(fig);
    for (const x of set || []) {
      x.shown = true;
      if (x.target.isConnected) x.onChange();
    }
  }
}

// setHeight sets an element's CSS height, only when it changes.
export function setHeight(e: HTMLElement, px: number): void {
  const v = px + "px";
  if (e.style.height !== v) e.style.height = v;
}

// el makes an element with a class and optional text.
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
