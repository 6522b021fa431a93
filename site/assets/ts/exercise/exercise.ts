// One exercise: its form (a number, a choice or an explanation), checking
// an answer against the model's (its tolerance, its key points), the hint
// ladder, and the reveal of the answer, after which the page's sim widget
// runs the exercise's scenario (the "connlab:run" page event,
// sim/server/PROTOCOL.md). In class mode (class.ts) an answer goes to the
// teacher instead, and the answer comes with the teacher's reveal.
import type { ExerciseKind, Instance } from "../sim/schema.gen";
import { parseNumber } from "../sim/helpers";
import { saveOne, type Progress } from "./progress";
import { gradeRubric } from "./rubric";
import { el, rich, t } from "./text";

// PageData is an exercise as its block's script.ex-data holds it
// (layouts/_markup/render-codeblock-exercise.html).
export interface PageData extends Instance {
  lab: string;
  lang: string;
  n: number;
  file?: string; // the page's Markdown, as the repository names it
  data?: string; // the URL of its lab as data (sim lab --json), for the model in the page
}

export class Exercise {
  readonly id: string;
  readonly lab: string;
  readonly kind: ExerciseKind;
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
