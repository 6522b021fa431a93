// The port grid ({{< portgrid block="exhaust" >}}): the local port range,
// a cell a port in the order ports are handed out, filling with TIME_WAIT
// and draining as each socket's 60 s run out, from the block's build-time
// time series (TIME_WAIT count, connects and failures per second), at any
// second of the run chosen with a slider.
import { type Strings, blockData, el, fill, nf0 } from "./common";

interface Sample { t_s: number; time_wait: number; connects: number; errors: number }

// PortRun is one variant's run as the grid reads it: the time series at
// one sample a second, and the cumulative connects.
export class PortRun {
  readonly times: number[] = [0];
  readonly cum: number[] = [0];
  readonly tw: number[] = [0];
  readonly errors: number[] = [0];
  constructor(readonly name: string, readonly label: string, series: Sample[]) {
    let c = 0;
    for (const s of series) {
      c += s.connects || 0;
      this.times.push(s.t_s);
      this.cum.push(c);
      this.tw.push(s.time_wait || 0);
      this.errors.push(s.errors || 0);
    }
  }
  get end(): number {
    return this.times[this.times.length - 1];
  }
  // connects is how many connections were opened by t (s), linear within a
  // sample's second, none after the run.
  connects(t: number): number {
    const T = this.times;
    if (t <= 0) return 0;
    if (t >= this.end) return this.cum[this.cum.length - 1];
    let i = 1;
    while (T[i] < t) i++;
    const f = (t - T[i - 1]) / (T[i] - T[i - 1]);
    return this.cum[i - 1] + f * (this.cum[i] - this.cum[i - 1]);
  }
  // openedAt is when the k-th connection (from 0) was opened, in s.
  openedAt(k: number): number {
    const C = this.cum;
    let i = 1;
    while (i < C.length && C[i] <= k) i++;
    if (i >= C.length) return this.end;
    const f = (k - C[i - 1] + 0.5) / (C[i] - C[i - 1]);
    return this.times[i - 1] + f * (this.times[i] - this.times[i - 1]);
  }
  // sample is the index of the sample that covers t (the first at or
  // after it), or -1 after the run.
  private sample(t: number): number {
    if (t <= 0) return 0;
    for (let i = 1; i < this.times.length; i++) if (this.times[i] >= t - 1e-6) return i;
    return t - this.end < 1 ? this.times.length - 1 : -1;
  }
  // timeWait is how many sockets are in TIME_WAIT at t: the model's count
  // during the run; after it, those opened in the 60 s before t (the model
  // closes each within milliseconds of opening it), as they expire.
  timeWait(t: number): number {
    const i = this.sample(t);
    return i >= 0 ? this.tw[i] : this.derived(t);
  }
  // derived is the count from the connects alone (the page's test holds it
  // to the model's count during the run).
  derived(t: number): number {
    return Math.round(this.connects(t) - this.connects(t - 60));
  }
  // failed is how many connect() calls failed in the second ending at t.
  failed(t: number): number {
    const i = this.sample(t);
    return i > 0 ? this.errors[i] : 0;
  }
}

export class PortGrid {
  private S: Strings;
  private runs: PortRun[] = [];
  private run!: PortRun;
  private n = 28232;
  private cols = 0;
  private canvas = el("canvas", "ports-canvas");
  private slider = el("input");
  private play = el("button", "fig-play");
  private readout = el("p", "fig-readout");
  private timer = 0;
  private t = 0;

  constructor(private root: HTMLElement) {
    this.S = JSON.parse(root.querySelector("script.fig-strings")?.textContent || "{}");
    const S = this.S;
    const d = blockData(root.dataset.block || "");
    if (!d) return;
    this.n = Number(d.port_count || d.portCount || 0) || portCount(String(d.portRange || "")) || this.n;
    // The labels are the page's own (a translation's); the series the build's.
    const labels: Record<string, string> = {};
    for (const v of d.variants || []) labels[v.name] = v.label || v.name;
    for (const v of d.results?.variants || []) {
      if (v.series && v.series.length) this.runs.push(new PortRun(v.name, labels[v.name] || v.label || v.name, v.series));
    }
    if (!this.runs.length) return;
    this.run = this.runs.find((r) => r.name === root.dataset.variant) || this.runs[0];
    const controls = el("div", "fig-controls");
    const pick = el("div", "fig-variants");
    pick.setAttribute("role", "radiogroup");
    for (const r of this.runs) {
      const l = el("label");
      const i = el("input");
      i.type = "radio";
      i.name = "portgrid-" + root.dataset.block;
      i.value = r.name;
      i.checked = r === this.run;
      i.addEventListener("change", () => {
        this.run = r;
        this.draw();
      });
      l.append(i, " " + r.label);
      pick.append(l);
    }
    const l = el("label", "", S.fig_time + " ");
    this.slider.type = "range";
    this.slider.min = "0";
    this.slider.max = String(Math.ceil(Math.max(...this.runs.map((r) => r.end)) + 60));
    this.slider.step = "1";
    this.slider.value = "0";
    this.slider.id = "portgrid-" + root.dataset.block + "-t";
    this.slider.addEventListener("input", () => {
      this.stop();
      this.t = Number(this.slider.value);
      this.draw();
    });
    l.append(this.slider);
    this.play.type = "button";
    this.play.textContent = S.fig_play;
    this.play.addEventListener("click", () => (this.timer ? this.stop() : this.start()));
    controls.append(pick, l, this.play);
    this.cols = Math.ceil(Math.sqrt(this.n));
    this.canvas.width = this.cols;
    this.canvas.height = Math.ceil(this.n / this.cols);
    this.canvas.setAttribute("role", "img");
    this.readout.setAttribute("aria-live", "polite");
    root.querySelector(".fig-fallback")?.remove();
    const legend = el("p", "fig-legend");
    for (const [cls, text] of [["free", S.fig_free], ["tw-new", S.fig_tw_new], ["tw-old", S.fig_tw_old]]) {
      const s = el("span", "key " + cls);
      s.append(el("i"), text);
      legend.append(s);
    }
    root.append(controls, this.canvas, this.readout, legend);
    this.draw();
  }

  private start(): void {
    const max = Number(this.slider.max);
    if (this.t >= max) this.t = 0;
    this.play.textContent = this.S.fig_pause;
    let last = performance.now();
    const step = (now: number) => {
      this.t = Math.min(max, this.t + ((now - last) / 1000) * 10); // 10 s of the run a second
      last = now;
      this.slider.value = String(Math.floor(this.t));
      this.draw();
      if (this.t >= max) return this.stop();
      this.timer = requestAnimationFrame(step);
    };
    this.timer = requestAnimationFrame(step);
  }

  private stop(): void {
    if (this.timer) cancelAnimationFrame(this.timer);
    this.timer = 0;
    this.play.textContent = this.S.fig_play;
  }

  private draw(): void {
    const r = this.run, t = this.t, n = this.n;
    const ctx = this.canvas.getContext("2d")!;
    const img = ctx.createImageData(this.canvas.width, this.canvas.height);
    const px = img.data;
    const total = Math.floor(r.connects(t));
    const tw = Math.min(n, r.timeWait(t));
    // Cell i holds the latest connection that used it: k ≡ i (mod n).
    for (let i = 0; i < n; i++) {
      let rgb = [233, 236, 240]; // free
      const k = total - 1 - ((total - 1 - i) % n + n) % n; // the latest k ≤ total-1 with k ≡ i
      if (total > 0 && k >= 0 && k >= total - tw) {
        const age = t - r.openedAt(k);
        const f = Math.min(1, Math.max(0, age / 60));
        rgb = [Math.round(95 + f * 120), Math.round(50 + f * 160), Math.round(170 + f * 70)]; // dark violet, fading
      }
      px[i * 4] = rgb[0];
      px[i * 4 + 1] = rgb[1];
      px[i * 4 + 2] = rgb[2];
      px[i * 4 + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    const failed = r.failed(t);
    const S = this.S;
    let text = fill(S.fig_readout, { t: nf0.format(t), tw: nf0.format(tw), free: nf0.format(Math.max(0, n - tw)), n: nf0.format(n) });
    if (failed > 0) text += " " + fill(S.fig_failed, { n: nf0.format(failed) });
    if (t > r.end) text += " " + S.fig_after;
    this.readout.textContent = text;
    this.canvas.setAttribute("aria-label", text);
    const ds = this.root.dataset;
    ds.t = String(t);
    ds.tw = String(tw);
    ds.derived = String(Math.min(n, r.derived(t)));
    ds.failed = String(failed);
    ds.current = r.name;
    ds.state = "ready";
  }
}

function portCount(range: string): number {
  const m = /^(\d+)\s*[-–\s]\s*(\d+)$/.exec(range.trim());
  return m ? Number(m[2]) - Number(m[1]) + 1 : 0;
}
