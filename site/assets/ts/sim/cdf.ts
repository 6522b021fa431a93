// The distribution of call times (curl's time_total) of every variant on
// one chart, as cumulative fractions: a step up at each call's time. Two
// populations (cold calls that connect, warm calls on a kept connection)
// show as two steps.
import { INK3, VARIANT, Width, el, setup, xAxis, yAxis } from "./canvas";
import type { BlockChartKind, Tip } from "./chart";
import type { VariantData } from "./store";
import { t, ms } from "./i18n";

const H = 190;

// cdfChart is the distribution under the panes, every variant on it.
export const cdfChart: BlockChartKind = {
  make({ tip }) {
    const cdf = new CDF(tip);
    const box = el("div", "sim-box");
    box.append(el("p", "sim-section", t("w_latency")), cdf.root);
    return { nodes: [box], render: (f) => cdf.render(f.vs) };
  },
};

export class CDF {
  root = el("div", "sim-cdf");
  private canvas = el("canvas");
  private sorted = new Map<VariantData, { n: number; v: Float64Array }>();
  private width: Width;
  private last: VariantData[] = [];

  constructor(private tip: Tip) {
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", t("w_latency"));
    this.root.append(this.canvas);
    this.canvas.addEventListener("mouseleave", () => this.tip(null));
    this.width = new Width(this.root, () => this.render(this.last));
  }

  private values(d: VariantData): Float64Array {
    const cached = this.sorted.get(d);
    if (cached && cached.n === d.calls.length) return cached.v;
    const ok = d.calls.filter((c) => !c.error);
    const v = new Float64Array(ok.length);
    for (let i = 0; i < ok.length; i++) v[i] = ok[i].total;
    v.sort();
    this.sorted.set(d, { n: d.calls.length, v });
    return v;
  }

  render(vs: VariantData[]): void {
    this.last = vs;
    const w = this.width.get();
    if (!w) return; // drawn when the ResizeObserver reports
    const ctx = setup(this.canvas, w, H);
    const left = 62;
    const right = w - 14;
    const top = 10;
    const bottom = H - 40;
    let hi = 0;
    const all = vs.map((d) => this.values(d));
    for (const v of all) if (v.length) hi = Math.max(hi, v[v.length - 1]);
    if (hi <= 0) {
      ctx.fillStyle = INK3;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillText(t("w_no_calls"), w / 2, H / 2);
      return;
    }
    hi *= 1.05;
    yAxis(ctx, left, top, bottom, 0, 1, t("w_y_fraction"), right, (v) => Math.round(v * 100) + "%");
    xAxis(ctx, left, right, bottom, 0, hi, t("w_x_latency"), top);
    const xOf = (v: number) => left + (v / hi) * (right - left);
    const yOf = (f: number) => bottom - f * (bottom - top);
    all.forEach((v, k) => {
      const n = v.length;
      if (!n) return;
      ctx.strokeStyle = VARIANT[k % VARIANT.length];
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.moveTo(xOf(0), yOf(0));
      const steps = Math.min(n, 400);
      let prevX = xOf(0);
      for (let s = 0; s < steps; s++) {
        const i = n <= 400 ? s : Math.floor((s / (steps - 1)) * (n - 1));
        const x = xOf(v[i]);
        ctx.lineTo(x, yOf(i / n));
        ctx.lineTo(x, yOf((i + 1) / n));
        prevX = x;
      }
      ctx.lineTo(Math.max(prevX, right), yOf(1));
      ctx.stroke();
      // The median, marked.
      const p50 = v[Math.min(n - 1, Math.floor(0.5 * n))];
      ctx.fillStyle = VARIANT[k % VARIANT.length];
      ctx.beginPath();
      ctx.arc(xOf(p50), yOf(0.5), 3.5, 0, Math.PI * 2);
      ctx.fill();
    });
    ctx.lineWidth = 1;
    this.canvas.onmousemove = (e) => {
      const r = this.canvas.getBoundingClientRect();
      const x = e.clientX - r.left;
      if (x < left || x > right) return this.tip(null);
      const at = ((x - left) / (right - left)) * hi;
      let h = `<strong>≤ ${ms(at)}</strong><table>`;
      vs.forEach((d, k) => {
        const v = all[k];
        let lo = 0;
        let up = v.length;
        while (lo < up) {
          const mid = (lo + up) >> 1;
          if (v[mid] <= at) lo = mid + 1;
          else up = mid;
        }
        const f = v.length ? lo / v.length : 0;
        h += `<tr><td><i style="background:${VARIANT[k % VARIANT.length]}"></i>${d.label.replace(/</g, "&lt;")}</td><td>${Math.round(f * 1000) / 10}%</td></tr>`;
      });
      this.tip(h + "</table>", e);
    };
  }
}
