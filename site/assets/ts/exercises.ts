// The exercise widget: every ```exercise block of a lab page (rendered by
// layouts/_markup/render-codeblock-exercise.html) becomes a question the
// student answers before the run reveals the answer.
//
// - Self-study: Check compares the prediction with the model's answer
//   (within its tolerance); a wrong try gets told which way it is off and a
//   hint; Show gives up. After the answer, the explanation, and the page's
//   sim widget runs the exercise's scenario (the "connlab:run" page event,
//   sim/server/PROTOCOL.md). Progress stays in this browser (localStorage).
// - ?seed=N: this student's own numbers, from the local server (GET
//   /exercise/api) or, on a static host, from the model in the page
//   (model/client.ts), which computes the same instances.
// - Class mode (sim serve --class, GET /class/info): the student joins with
//   a display name, predictions go to the teacher over /class/ws, and the
//   answer comes when the teacher reveals it.
//
// Nothing is sent anywhere except to the server that served the page, and
// only in class mode or for a seed.
import { host, model } from "./model/client";
import { parseNumber } from "./sim/helpers";
import { keep, loadKept } from "./kept";
import type { Instance, RubricPoint } from "./sim/schema.gen";

interface PageData extends Instance {
  lab: string;
  lang: string;
  n: number;
  file?: string; // the page's Markdown, as the repository names it
  data?: string; // the URL of its lab as data (sim lab --json), for the model in the page
}

type Strings = Record<string, string>;

let S: Strings = {};

function t(key: string, vars: Record<string, string | number> = {}): string {
  let s = S[key] ?? key;
  for (const [k, v] of Object.entries(vars)) s = s.split("{" + k + "}").join(String(v));
  return s;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls = "", text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// rich renders an exercise text: plain text with `code` spans, the only
// markup the exercise format uses. Never innerHTML.
function rich(parent: HTMLElement, s: string): HTMLElement {
  parent.replaceChildren();
  String(s ?? "")
    .split("`")
    .forEach((part, i) => parent.append(i % 2 ? el("code", "", part) : document.createTextNode(part)));
  return parent;
}

// ---------------------------------------------------------------------------
// Key points of an explanation: sim/lab/exercise_rubric.go in the page (the
// browser test holds it to Go's cases, sim/lab/testdata/rubric.json).

// normalizeAnswer lower-cases s and folds the punctuation between words
// into single spaces; letters, digits and _ . - : % stay.
export function normalizeAnswer(s: string): string {
  let out = "";
  let space = true;
  for (const ch of s.toLowerCase()) {
    if (/[\p{L}\p{N}_.\-:%]/u.test(ch)) {
      out += ch;
      space = false;
    } else if (!space) {
      out += " ";
      space = true;
    }
  }
  return out.trim();
}

const asciiAlnum = (c: string) => /^[A-Za-z0-9]$/.test(c);

// mentions reports whether the normalized text names the phrase: at a word
// start for an ASCII word or number, ending where the phrase does for a
// number or a word of up to three letters (Go's mentions, the same rules).
export function mentions(text: string, phrase: string): boolean {
  const p = normalizeAnswer(phrase);
  if (!p) return false;
  const chars = [...p];
  const first = chars[0], last = chars[chars.length - 1];
  const tail = (/[A-Za-z]*$/.exec(p) || [""])[0].length;
  for (let at = text.indexOf(p); at >= 0; at = text.indexOf(p, at + 1)) {
    const before = at > 0 ? [...text.slice(0, at)].pop() || "" : "";
    const after = [...text.slice(at + p.length)][0] || "";
    const okStart = at === 0 || !asciiAlnum(first) || !asciiAlnum(before);
    const okEnd = after === "" || ((!/[0-9]/.test(last) || !/[0-9]/.test(after)) && (tail === 0 || tail > 3 || !asciiAlnum(after)));
    if (okStart && okEnd) return true;
  }
  return false;
}

export function gradeRubric(answer: string, rubric: RubricPoint[]): boolean[] {
  const text = normalizeAnswer(answer);
  return rubric.map((p) => p.any.some((w) => mentions(text, w)));
}

// ---------------------------------------------------------------------------
// Progress in localStorage.

interface Progress {
  state: "" | "right" | "shown" | "sent";
  tries: number;
  value: string;
  seed: number;
}

const STORE = "connlab:exercises:v1";

const loadAll = () => loadKept<Progress>(STORE);
const saveOne = (key: string, p: Progress | null) => keep(STORE, key, p);

// ---------------------------------------------------------------------------
// One exercise.

class Exercise {
  readonly id: string;
  readonly lab: string;
  readonly kind: string; // "number", "choice" or "explain"
  inst: Instance;
  hidden = false; // class mode: the answer comes with the teacher's reveal
  classSend: ((x: Exercise, value: string) => void) | null = null;
  private hintsShown = 0;
  private points: boolean[] | null = null; // an explanation's key points, once checked
  private progress: Progress;
  private readonly key: string;
  private readonly q: HTMLElement;
  private readonly title: HTMLElement;
  private readonly feedback: HTMLElement;
  private readonly hintList: HTMLElement;
  private readonly reveal: HTMLElement;
  private readonly checkBtn: HTMLButtonElement;
  private readonly hintBtn: HTMLButtonElement | null;
  private readonly showBtn: HTMLButtonElement | null;
  private readonly input: HTMLInputElement | HTMLTextAreaElement | null;
  private choicesEl: HTMLOListElement | null;

  constructor(readonly root: HTMLElement, data: PageData, private readonly onChange: () => void) {
    this.id = data.id;
    this.lab = data.lab;
    this.kind = data.kind;
    this.inst = data;
    this.key = `${data.lang}/${data.lab}/${data.id}`;
    const q = (sel: string) => root.querySelector<HTMLElement>(sel);
    this.q = q(".ex-question")!;
    this.title = q(".ex-title")!;
    this.feedback = q(".ex-feedback")!;
    this.hintList = q(".ex-hint-list")!;
    this.reveal = q(".ex-reveal")!;
    this.checkBtn = q(".ex-check") as HTMLButtonElement;
    this.hintBtn = q(".ex-hint") as HTMLButtonElement | null;
    this.showBtn = q(".ex-show") as HTMLButtonElement | null;
    this.input = root.querySelector<HTMLInputElement | HTMLTextAreaElement>(".ex-value, .ex-text");
    this.choicesEl = root.querySelector<HTMLOListElement>(".ex-choices");
    this.progress = { state: "", tries: 0, value: "", seed: 0 };

    this.checkBtn.addEventListener("click", () => this.check());
    this.hintBtn?.addEventListener("click", () => this.nextHint());
    this.showBtn?.addEventListener("click", () => this.giveUp());
    if (this.input instanceof HTMLInputElement) {
      this.input.addEventListener("keydown", (e) => {
        if ((e as KeyboardEvent).key === "Enter") this.check();
      });
    }
    this.input?.addEventListener("input", () => this.input?.removeAttribute("aria-invalid"));
    this.hintLabel();
  }

  // hintLabel says which rung of the hint ladder the button gives next.
  private hintLabel(): void {
    const m = (this.inst.hints || []).length;
    if (this.hintBtn && m > 0) this.hintBtn.textContent = t("hint_n", { n: Math.min(this.hintsShown + 1, m), m });
  }

  // use shows an instance (the page's own, or a seed's from the server).
  // Another seed is another exercise: what the page showed of the previous
  // one goes.
  use(inst: Instance, hidden: boolean): void {
    const other = (inst.seed ?? 0) !== (this.inst.seed ?? 0);
    this.inst = inst;
    if (other) {
      this.clearUI();
      this.progress = { state: "", tries: 0, value: "", seed: inst.seed ?? 0 };
      if (this.input) this.input.value = "";
    }
    this.hidden = hidden;
    this.root.dataset.seed = String(inst.seed ?? 0); // which numbers the page shows
    if (inst.title) rich(this.title, inst.title);
    this.q.replaceChildren(rich(el("p"), inst.question));
    if (this.kind === "choice" && this.choicesEl && inst.choices) {
      const ol = this.choicesEl;
      ol.replaceChildren();
      inst.choices.forEach((c, i) => {
        const li = el("li");
        if (!hidden && inst.correct === i + 1) li.classList.add("ex-correct");
        const label = el("label");
        const radio = el("input");
        radio.type = "radio";
        radio.name = "ex-" + this.id;
        radio.value = String(i + 1);
        label.append(radio, " ", rich(el("span", "ex-choice-text"), c));
        li.append(label);
        ol.append(li);
      });
    }
    this.root.querySelector(".ex-keybox")?.replaceChildren(...this.answerNodes(false));
    this.hintLabel();
    if (!this.reveal.hidden) this.reveal.replaceChildren(...this.answerNodes(true));
  }

  // restore applies the progress kept for this seed.
  restore(all: Record<string, Progress>): void {
    const p = all[this.key];
    const seed = this.inst.seed ?? 0;
    if (!p || p.seed !== seed) return;
    this.progress = p;
    if (this.input && p.value) this.input.value = p.value;
    if (this.kind === "choice" && p.value) {
      const r = this.root.querySelector<HTMLInputElement>(`input[type=radio][value="${CSS.escape(p.value)}"]`);
      if (r) r.checked = true;
    }
    if (p.state === "right" || p.state === "shown") this.showAnswer(p.state === "right", false);
    if (p.state === "sent") this.say(t("class_sent"), "info");
  }

  done(): boolean {
    return this.progress.state === "right" || this.progress.state === "shown";
  }

  reset(): void {
    this.progress = { state: "", tries: 0, value: "", seed: this.inst.seed ?? 0 };
    saveOne(this.key, null);
    this.clearUI();
    this.onChange();
  }

  private clearUI(): void {
    this.hintsShown = 0;
    this.points = null;
    delete this.root.dataset.hints;
    this.hintList.replaceChildren();
    this.reveal.hidden = true;
    this.reveal.replaceChildren();
    this.say("", "");
    this.root.classList.remove("ex-done");
    this.setLocked(false);
    if (this.hintBtn) this.hintBtn.disabled = false;
    this.hintLabel();
    for (const li of this.root.querySelectorAll(".ex-choices li")) li.classList.remove("ex-is-right", "ex-is-wrong");
  }

  private save(): void {
    this.progress.seed = this.inst.seed ?? 0;
    saveOne(this.key, this.progress);
    this.onChange();
  }

  private say(text: string, kind: "ok" | "bad" | "info" | ""): void {
    this.feedback.textContent = text;
    this.feedback.className = "ex-feedback ex-live" + (kind ? " " + kind : "");
  }

  private value(): string {
    if (this.kind === "choice") {
      const r = this.root.querySelector<HTMLInputElement>("input[type=radio]:checked");
      return r ? r.value : "";
    }
    return this.input ? this.input.value.trim() : "";
  }

  private check(): void {
    const raw = this.value();
    if (this.kind === "explain") {
      if (!raw) return this.say(t("want_text"), "bad");
      this.progress.value = raw;
      if (this.classSend) {
        this.classSend(this, raw);
        return;
      }
      const rubric = this.inst.rubric || [];
      let ok = true;
      this.points = null;
      if (rubric.length) {
        this.points = gradeRubric(raw, rubric);
        ok = this.points.filter(Boolean).length >= (this.inst.pass || rubric.length);
      }
      this.progress.state = ok ? "right" : "shown";
      this.save();
      this.showAnswer(ok && rubric.length > 0, true);
      return;
    }
    if (this.kind === "number" && parseNumber(raw, this.inst.unit || "") === null) {
      this.input?.setAttribute("aria-invalid", "true");
      return this.say(t("want_number") + (this.inst.unit ? ` (${this.inst.unit})` : ""), "bad");
    }
    if (this.kind === "choice" && !raw) return this.say(t("want_choice"), "bad");
    this.progress.value = raw;
    if (this.classSend) {
      this.classSend(this, raw);
      return;
    }
    if (this.inst.answer === null || this.inst.answer === undefined) return this.say(t("no_answers").split("`").join(""), "info");
    this.progress.tries++;
    let ok = false;
    let msg = t("wrong");
    if (this.kind === "number") {
      const v = parseNumber(raw, this.inst.unit || "")!;
      const a = Number(this.inst.answer);
      const tol = Number(this.inst.tolerance ?? 0);
      ok = Math.abs(v - a) <= tol + 1e-9 * Math.max(1, Math.abs(a));
      if (!ok) msg = v > a ? t("too_high") : t("too_low");
    } else {
      ok = Number(raw) === this.inst.correct;
      if (!ok) {
        const li = this.root.querySelectorAll(".ex-choices li")[Number(raw) - 1];
        li?.classList.add("ex-is-wrong");
      }
    }
    if (ok) {
      this.progress.state = "right";
      this.save();
      this.showAnswer(true, true);
      return;
    }
    this.save();
    this.say(msg, "bad");
    this.nextHint();
  }

  // nextHint shows the next rung of the hint ladder, one at a time.
  private nextHint(): void {
    const hs = this.inst.hints || [];
    if (this.hintsShown >= hs.length) return;
    this.hintList.append(rich(el("li"), hs[this.hintsShown]));
    this.hintsShown++;
    this.root.dataset.hints = String(this.hintsShown);
    this.hintLabel();
    if (this.hintBtn && this.hintsShown >= hs.length) this.hintBtn.disabled = true;
  }

  private giveUp(): void {
    if (this.hidden) return;
    this.progress.state = "shown";
    this.save();
    this.showAnswer(false, true);
  }

  private setLocked(locked: boolean): void {
    this.checkBtn.disabled = locked;
    if (this.showBtn) this.showBtn.disabled = locked;
    if (this.input) this.input.readOnly = locked;
    for (const r of this.root.querySelectorAll<HTMLInputElement>("input[type=radio]")) r.disabled = locked;
  }

  answerNodes(withRun: boolean): HTMLElement[] {
    const inst = this.inst;
    const out: HTMLElement[] = [];
    if (inst.answer !== null && inst.answer !== undefined) {
      const p = el("p", "ex-answer");
      p.append(el("strong", "", (this.kind === "explain" ? t("model_answer") : t("answer")) + ": "));
      let text = inst.answer_text || String(inst.answer);
      if (this.kind === "choice" && inst.correct && inst.choices) text = `${inst.correct}) ${inst.choices[inst.correct - 1]}`;
      p.append(rich(el("span"), text));
      if (this.kind === "number" && inst.tolerance_text) p.append(" ", el("span", "ex-tol", `(${t("tolerance")} ${inst.tolerance_text})`));
      out.push(p);
    }
    if (inst.explain) {
      const p = el("p", "ex-why");
      p.append(el("strong", "", t("why") + ": "), rich(el("span"), inst.explain));
      out.push(p);
    }
    // The key points an explanation is checked against, marked once checked.
    const rubric = inst.rubric || [];
    if (this.kind === "explain" && rubric.length && !this.hidden) {
      const pts = this.points;
      const head = el("p", "ex-points-title");
      head.append(el("strong", "", t("key_points") + ": "));
      if (pts) head.append(t("points_named", { n: pts.filter(Boolean).length, m: rubric.length, k: inst.pass || rubric.length }));
      const ul = el("ul", "ex-points");
      rubric.forEach((r, i) => {
        const li = rich(el("li"), r.point);
        if (pts) {
          li.classList.add(pts[i] ? "found" : "missing");
          li.dataset.found = pts[i] ? "1" : "0";
          li.prepend(el("span", "mark", pts[i] ? "✓ " : "✗ "));
          li.title = pts[i] ? t("point_found") : t("point_missing");
        }
        ul.append(li);
      });
      out.push(head, ul);
    }
    const sc = inst.scenario;
    if (sc && sc.block) {
      if (withRun && document.getElementById("sim-" + sc.block)) {
        const p = el("p", "ex-run");
        const a = el("a", "", t("see_run") + " ↑");
        a.href = "#sim-" + sc.block;
        p.append(a);
        out.push(p);
      }
      if (sc.command) {
        const p = el("p", "ex-cmd", t("run_cmd") + ": ");
        p.append(el("code", "", sc.command));
        out.push(p);
      }
    }
    return out;
  }

  // showAnswer reveals the answer and, when the student just got there,
  // asks the page's sim widget to run the exercise's scenario.
  showAnswer(right: boolean, run: boolean, note = ""): void {
    this.setLocked(true);
    this.root.classList.add("ex-done");
    if (this.kind === "choice" && this.inst.correct) {
      this.root.querySelectorAll(".ex-choices li")[this.inst.correct - 1]?.classList.add("ex-is-right");
    }
    if (note) this.say(note, right ? "ok" : "info");
    else if (this.kind !== "explain" || this.points) this.say(right ? t("right") : this.points ? t("points_short") : "", right ? "ok" : this.points ? "bad" : "");
    else this.say("", "");
    this.reveal.replaceChildren(...this.answerNodes(true));
    const again = el("button", "ex-again", t("reset"));
    again.type = "button";
    again.addEventListener("click", () => this.reset());
    if (!this.classSend) this.reveal.append(again);
    this.reveal.hidden = false;
    const sc = this.inst.scenario;
    if (run && sc && sc.block && document.getElementById("sim-" + sc.block)) {
      document.dispatchEvent(new CustomEvent("connlab:run", { detail: { block: sc.block, params: { ...sc.set }, mode: "model" } }));
    }
  }

  // Class mode.
  sent(value: string): void {
    this.progress.value = value;
    this.progress.state = "sent";
    this.save();
    this.say(t("class_sent"), "info");
  }

  classReveal(inst: Instance, yours: { value: string; ok: boolean } | null): void {
    this.use(inst, false);
    if (yours) {
      if (this.input) this.input.value = yours.value;
      if (this.kind === "choice") {
        const r = this.root.querySelector<HTMLInputElement>(`input[type=radio][value="${CSS.escape(yours.value)}"]`);
        if (r) r.checked = true;
      }
    }
    const right = !!yours && yours.ok && this.kind !== "explain";
    const note = !yours || this.kind === "explain" ? "" : yours.ok ? t("class_yours_right") : t("class_yours_wrong", { value: yours.value });
    this.progress.state = right ? "right" : "shown";
    this.save();
    this.showAnswer(right, true, note);
  }
}

// ---------------------------------------------------------------------------
// Class mode: /class/ws.

interface ClassInfo {
  class: boolean;
  per_student: boolean;
}

class ClassClient {
  private ws: WebSocket | null = null;
  private retry = 500;
  private name = "";
  private token = "";
  joined = false;

  constructor(
    private readonly page: Page,
    private readonly bar: HTMLElement,
  ) {
    const saved = ClassClient.saved();
    this.name = saved.name || "";
    this.token = saved.token || "";
    const form = bar.querySelector<HTMLFormElement>(".ex-class-join")!;
    const input = form.querySelector<HTMLInputElement>("input[name=name]")!;
    input.value = this.name;
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const name = input.value.trim();
      if (!name) return;
      if (name !== this.name) this.token = "";
      this.name = name;
      this.save();
      this.connect();
    });
    bar.hidden = false;
    if (this.name) this.connect();
  }

  static saved(): { name?: string; token?: string } {
    try {
      return JSON.parse(localStorage.getItem("connlab:class") || "{}") || {};
    } catch {
      return {};
    }
  }

  private save(): void {
    try {
      localStorage.setItem("connlab:class", JSON.stringify({ name: this.name, token: this.token }));
    } catch {
      /* not kept */
    }
  }

  private status(s: string): void {
    const p = this.bar.querySelector(".ex-class-status");
    if (p) p.textContent = s;
  }

  private connect(): void {
    this.ws?.close();
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/class/ws?lang=${encodeURIComponent(this.page.lang)}`);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 500;
      ws.send(JSON.stringify({ type: "join", name: this.name, token: this.token }));
    };
    ws.onmessage = (ev) => {
      let m: Record<string, unknown>;
      try {
        m = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      this.message(m);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.joined = false;
      this.status(t("class_lost"));
      setTimeout(() => {
        if (this.ws === ws) this.connect();
      }, this.retry);
      this.retry = Math.min(this.retry * 2, 10000);
    };
  }

  send(x: Exercise, value: string): void {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || !this.joined) {
      this.status(t("class_lost"));
      return;
    }
    this.ws.send(JSON.stringify({ type: "answer", lab: x.lab, exercise: x.id, value }));
  }

  private async message(m: Record<string, unknown>): Promise<void> {
    const page = this.page;
    switch (m.type) {
      case "joined": {
        this.joined = true;
        this.name = String(m.name);
        this.token = String(m.token);
        this.save();
        this.status(t("class_joined", { name: this.name }));
        const form = this.bar.querySelector<HTMLFormElement>(".ex-class-join");
        if (form) form.hidden = true;
        // A class is a fresh start: what this browser did alone stays out.
        for (const x of page.exercises) {
          x.reset();
          x.classSend = (x, v) => this.send(x, v);
        }
        await page.loadSeed(Number(m.seed) || 0, true);
        for (const a of (m.answered as { lab: string; exercise: string; value: string }[]) || []) {
          const x = page.find(a.lab, a.exercise);
          x?.sent(a.value);
        }
        for (const r of (m.revealed as Record<string, unknown>[]) || []) this.message(r);
        break;
      }
      case "ack": {
        const x = page.find(String(m.lab), String(m.exercise));
        x?.sent(String(m.value));
        break;
      }
      case "reveal": {
        const inst = m.exercise as Instance;
        const x = page.find(String(m.lab), inst.id);
        x?.classReveal(inst, (m.yours as { value: string; ok: boolean }) || null);
        break;
      }
      case "reset": {
        const x = page.find(String(m.lab), String(m.exercise));
        if (x) {
          x.reset();
          x.classSend = (x, v) => this.send(x, v);
          await page.loadSeed(page.seed, true);
        }
        break;
      }
      case "error":
        if (!this.joined) {
          this.status(`${t("class_full")}: ${String(m.message)}`);
          const form = this.bar.querySelector<HTMLFormElement>(".ex-class-join");
          if (form) form.hidden = false;
          this.token = "";
          this.save();
        } else {
          this.status(String(m.message));
        }
        break;
    }
  }
}

// ---------------------------------------------------------------------------
// The page.

class Page {
  exercises: Exercise[] = [];
  lang = document.documentElement.lang || "en";
  seed = 0;
  private lab = "";
  private data = "";
  private server = false;
  private notice: HTMLElement | null = null;
  private progressEl: HTMLElement | null = null;

  start(): void {
    const toolbar = document.querySelector<HTMLElement>(".ex-toolbar");
    const strings = toolbar?.querySelector(".ex-strings");
    try {
      S = JSON.parse(strings?.textContent || "{}");
    } catch {
      S = {};
    }
    this.notice = toolbar?.querySelector(".ex-notice") ?? null;
    this.progressEl = toolbar?.querySelector(".ex-progress") ?? null;
    for (const sec of document.querySelectorAll<HTMLElement>("section.exercise")) {
      let data: PageData;
      try {
        data = JSON.parse(sec.querySelector("script.ex-data")?.textContent || "");
      } catch {
        continue;
      }
      this.lab = data.lab;
      if (data.lang) this.lang = data.lang;
      if (data.data) this.data = data.data;
      try {
        this.exercises.push(new Exercise(sec, data, () => this.updateProgress()));
      } catch (e) {
        console.error("exercise " + data.id, e);
      }
    }
    if (!this.exercises.length) return;
    document.documentElement.classList.add("ex-js");
    for (const b of document.querySelectorAll<HTMLButtonElement>(".ex-print")) b.addEventListener("click", () => window.print());
    const all = loadAll();
    for (const x of this.exercises) x.restore(all);
    this.updateProgress();
    void this.connect().finally(() => {
      document.documentElement.dataset.exReady = "1";
    });
  }

  // hideKeys takes the build's answers off the page in class mode: the
  // teacher reveals them (a page's source still holds them: a class seed
  // other than 0, sim serve's default, makes them the wrong numbers).
  private hideKeys(): void {
    for (const n of document.querySelectorAll(".ex-keybox, .ex-answer-static")) n.replaceChildren();
    for (const n of document.querySelectorAll(".ex-correct")) n.classList.remove("ex-correct");
    for (const a of document.querySelectorAll<HTMLElement>('.ex-links a[href="#exercise-key"], .ex-print-key')) a.hidden = true;
    for (const x of this.exercises) x.use({ ...x.inst, answer: null, correct: 0, tolerance: null, answer_text: "", explain: "" }, true);
  }

  find(lab: string, id: string): Exercise | undefined {
    return this.exercises.find((x) => x.lab === lab && x.id === id);
  }

  private say(s: string): void {
    if (!this.notice) return;
    this.notice.textContent = s;
    this.notice.hidden = !s;
  }

  private updateProgress(): void {
    if (!this.progressEl) return;
    const n = this.exercises.filter((x) => x.done()).length;
    this.progressEl.textContent = " " + t("progress", { n, m: this.exercises.length });
  }

  // loadSeed gets a seed's exercises from the local server or, without
  // one, from the model in the page; false when neither gives them.
  async loadSeed(seed: number, hidden: boolean): Promise<boolean> {
    try {
      let doc: { seed: number; hidden: boolean; exercises: Instance[] };
      if (this.server) {
        const u = `/exercise/api?lab=${encodeURIComponent(this.lab)}&lang=${encodeURIComponent(this.lang)}&seed=${seed}`;
        const r = await fetch(u, { headers: { Accept: "application/json" } });
        if (!r.ok) return false;
        doc = await r.json();
      } else {
        if (!this.data || !model.available()) return false;
        this.say(t("model_loading"));
        const ok = (await model.load()) && (await model.source(this.lab, this.lang, this.data));
        this.say("");
        const r = ok ? await model.exercises(this.lab, this.lang, seed) : null;
        if (!r) return false;
        doc = r as unknown as typeof doc;
      }
      this.seed = doc.seed;
      for (const inst of doc.exercises) {
        const x = this.find(this.lab, inst.id);
        if (x) x.use(inst, hidden || doc.hidden);
      }
      return true;
    } catch {
      return false;
    }
  }

  private async connect(): Promise<void> {
    const param = new URLSearchParams(location.search).get("seed");
    let info: ClassInfo | null = null;
    const h = await host();
    this.server = h.server;
    if (!this.server) {
      // A static host: class mode needs the teacher's server.
      const note = document.querySelector<HTMLElement>(".ex-toolbar .ex-class-static");
      if (note) note.hidden = false;
    }
    // Only a server in class mode has /class/info (its probe says so):
    // asking another one logged a 404 in the console of every lab page.
    if (this.server && h.class) {
      try {
        const r = await fetch("/class/info", { headers: { Accept: "application/json" } });
        if (r.ok) info = (await r.json()) as ClassInfo;
      } catch {
        info = null;
      }
    }
    if (info && info.class) {
      this.hideKeys();
      const bar = document.querySelector<HTMLElement>(".ex-toolbar .ex-class");
      if (bar) new ClassClient(this, bar);
      return;
    }
    if (param === null) {
      // A build without the key (no `make data`): the local server has it.
      if (this.exercises.some((x) => x.kind !== "explain" && (x.inst.answer === null || x.inst.answer === undefined))) {
        if (await this.loadSeed(0, false)) {
          const all = loadAll();
          for (const x of this.exercises) x.restore(all);
        }
      }
      return;
    }
    const seed = Number(param);
    if (!Number.isSafeInteger(seed) || seed < 0) return;
    if (await this.loadSeed(seed, false)) {
      const all = loadAll();
      for (const x of this.exercises) x.restore(all);
      this.say(t("seeded", { seed }));
    } else {
      this.say(t("seed_needs_server"));
    }
  }
}

function start(): void {
  const page = new Page();
  page.start();
  (window as unknown as { connlabExercises: Page }).connlabExercises = page;
  (window as unknown as { connlabRubric: unknown }).connlabRubric = { normalizeAnswer, mentions, gradeRubric };
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
