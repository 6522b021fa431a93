// Predict before you see: a ```sim block with a [predict] table (rendered
// by partials/sim-predict.html) keeps its charts and numbers hidden
// (data-predict="pending", css/teach.css) until the reader commits to a
// number or a choice, or skips. Then it shows them, runs the block (the
// "connlab:run" page event), and sets the prediction beside the model's
// answer, which the build computed with the same Go code as sim run
// (BlockResult.predict), with the explanation. The reader's prediction is
// kept in this browser (localStorage), so the page does not ask again.

import { keep, loadKept } from "./kept";

interface Answer { value: number; tolerance?: number; choice?: number }

interface Data {
  block: string; lab: string; lang: string; kind: "number" | "choice";
  question: string; unit: string; choices: string[]; explain: string;
  answer: Answer | null; strings: Record<string, string>;
}

interface Kept { skipped?: boolean; value?: string }

const STORE = "connlab:predict:v1";

const loadPredictions = () => loadKept<Kept>(STORE);
const keepPrediction = (key: string, k: Kept | null) => keep(STORE, key, k);

function fill(s: string, vars: Record<string, string>): string {
  for (const k in vars) s = s.split("{" + k + "}").join(vars[k]);
  return s;
}

// parseNumber reads a prediction as the exercises do: "14", "14 ms",
// "~14", "1,000".
function parseNumber(raw: string, unit: string): number | null {
  let s = raw.trim();
  for (const p of ["≈", "~", "약"]) if (s.startsWith(p)) s = s.slice(p.length).trim();
  if (unit && s.endsWith(unit)) s = s.slice(0, -unit.length).trim();
  s = s.split("_").join("");
  if (/^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) s = s.split(",").join("");
  if (!/^[-+]?(\d+\.?\d*|\.\d+)$/.test(s)) return null;
  const f = Number(s);
  return isFinite(f) ? f : null;
}

// rich renders text with `code` spans, the only markup the texts use.
function rich(parent: HTMLElement, s: string): void {
  s.split("`").forEach((part, i) => {
    if (i % 2) {
      const c = document.createElement("code");
      c.textContent = part;
      parent.append(c);
    } else parent.append(part);
  });
}

class Prediction {
  private d: Data;
  private key: string;
  private fig: HTMLElement;
  private result: HTMLElement;
  private nf: Intl.NumberFormat;

  constructor(private box: HTMLElement) {
    this.d = JSON.parse(box.querySelector("script.predict-data")?.textContent || "{}");
    // A build without the model's results (no `make data`) has no answer.
    if (!this.d.answer || typeof this.d.answer.value !== "number") this.d.answer = null;
    this.fig = box.closest("figure.sim") as HTMLElement;
    this.key = `${this.d.lang}/${this.d.lab}/${this.d.block}`;
    this.result = box.querySelector(".pr-result") as HTMLElement;
    this.nf = new Intl.NumberFormat(this.d.lang || "en", { maximumFractionDigits: 2 });
    const form = box.querySelector("form.pr-form") as HTMLFormElement;
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.predict();
    });
    box.querySelector(".pr-skip")?.addEventListener("click", () => this.reveal({ skipped: true }, true));
    // Another part of the page runs the block (an exercise's answer): the
    // reader sees it, so the question is over.
    document.addEventListener("connlab:run", (e) => {
      const d = (e as CustomEvent).detail || {};
      if (d.block === this.d.block && this.fig.dataset.predict === "pending") this.reveal({ skipped: true }, false);
    });
    const kept = loadPredictions()[this.key];
    if (kept) this.reveal(kept, false);
    // A link that sets this block's parameters (Copy link) opens it shown.
    else if ([...new URLSearchParams(location.search).keys()].some((k) => k.startsWith(this.d.block + "."))) this.reveal({ skipped: true }, false);
  }

  private predict(): void {
    const d = this.d;
    let value = "";
    if (d.kind === "choice") {
      const r = this.box.querySelector<HTMLInputElement>("input[type=radio]:checked");
      if (!r) return this.say(d.strings.want);
      value = r.value;
    } else {
      const input = this.box.querySelector<HTMLInputElement>(".pr-value");
      const raw = input?.value || "";
      if (parseNumber(raw, d.unit) === null) {
        input?.setAttribute("aria-invalid", "true");
        return this.say(d.strings.want);
      }
      value = raw.trim();
    }
    this.reveal({ value }, true);
  }

  private say(s: string): void {
    this.result.textContent = s;
  }

  private model(): string {
    const a = this.d.answer;
    if (!a) return "?";
    if (this.d.kind === "choice") return this.d.choices[(a.choice || 1) - 1] || "?";
    return this.nf.format(a.value) + (this.d.unit ? " " + this.d.unit : "");
  }

  // reveal shows the block, and the prediction beside the answer; run asks
  // the block's widget for a run of the block as written.
  private reveal(k: Kept, run: boolean): void {
    const d = this.d, S = d.strings, a = d.answer;
    keepPrediction(this.key, k);
    this.fig.dataset.predict = "done";
    this.result.replaceChildren();
    const line = document.createElement("span");
    let ok: boolean | null = null;
    if (k.skipped || k.value === undefined) {
      line.textContent = fill(S.skipped, { model: this.model() });
    } else if (d.kind === "choice") {
      const you = d.choices[Number(k.value) - 1] || k.value;
      ok = !!a && Number(k.value) === a.choice;
      line.textContent = fill(S.chose, { you, model: this.model() });
    } else {
      const v = parseNumber(k.value, d.unit);
      ok = !!a && v !== null && Math.abs(v - a.value) <= (a.tolerance || 0) + 1e-9 * Math.max(1, Math.abs(a.value));
      line.textContent = fill(S.said, { you: v === null ? k.value : this.nf.format(v) + (d.unit ? " " + d.unit : ""), model: this.model() });
    }
    if (ok !== null) {
      const v = document.createElement("span");
      v.className = "pr-verdict " + (ok ? "ok" : "bad");
      v.textContent = ok ? S.right : S.off;
      this.result.append(v, " ");
    }
    this.result.append(line);
    this.fig.dataset.predictResult = ok === null ? "skipped" : ok ? "right" : "off";
    if (d.explain && a) {
      const p = document.createElement("p");
      p.className = "pr-why";
      const b = document.createElement("strong");
      b.textContent = S.why + ": ";
      p.append(b);
      rich(p, d.explain.split("{answer}").join(this.nf.format(a.value)));
      this.box.append(p);
    }
    const again = document.createElement("button");
    again.type = "button";
    again.className = "pr-again";
    again.textContent = S.again;
    again.addEventListener("click", () => {
      keepPrediction(this.key, null);
      this.box.querySelector(".pr-why")?.remove();
      again.remove();
      this.result.replaceChildren();
      this.fig.dataset.predict = "pending";
      delete this.fig.dataset.predictResult;
    });
    this.result.append(" ", again);
    if (run) {
      document.dispatchEvent(new CustomEvent("connlab:run", { detail: { block: d.block, params: {}, mode: "model" } }));
    }
  }
}

function startPredictions(): void {
  for (const box of document.querySelectorAll<HTMLElement>("figure.sim .predict")) {
    try {
      new Prediction(box);
    } catch (e) {
      console.error("predict", e);
    }
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startPredictions);
else startPredictions();
