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
//
// This file is the page: it finds the exercises when the page loads, keeps
// the progress line and the notice, and gets a seed's numbers. One
// exercise is exercise/exercise.ts; class mode, exercise/class.ts.
import { host, model } from "./model/client";
import type { Instance } from "./sim/schema.gen";
import { ClassClient, classInfo } from "./exercise/class";
import { Exercise, type PageData } from "./exercise/exercise";
import { loadAll } from "./exercise/progress";
import { gradeRubric, mentions, normalizeAnswer } from "./exercise/rubric";
import { loadStrings, t } from "./exercise/text";

// Page is the page's exercises (the ClassPage the class client reaches).
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
    loadStrings(toolbar);
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
    const h = await host();
    this.server = h.server;
    if (!this.server) {
      // A static host: class mode needs the teacher's server.
      const note = document.querySelector<HTMLElement>(".ex-toolbar .ex-class-static");
      if (note) note.hidden = false;
    }
    const info = await classInfo(h);
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
