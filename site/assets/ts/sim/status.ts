// The widget's status line (what a run is doing, or why none can run, and
// how far the model in the page has loaded) and the notes under it (a
// stream cut short, events dropped).
import { model } from "../model/client";
import { el } from "./canvas";
import { t } from "./i18n";

export class Status {
  readonly root = el("div", "sim-status");
  readonly notes = el("ul", "sim-notes");

  constructor() {
    this.root.setAttribute("role", "status");
    this.root.setAttribute("aria-live", "polite");
  }

  // set shows s; state is data-state, which the model's progress and the
  // tests read.
  set(s: string, bad = false, state = ""): void {
    this.root.textContent = s;
    this.root.classList.toggle("bad", bad);
    this.root.dataset.state = state;
  }

  note(s: string): void {
    this.notes.append(el("li", "", s));
  }

  clearNotes(): void {
    this.notes.replaceChildren();
  }

  // model shows how far the model in the page has loaded, while no run
  // (running) says more.
  model(running: boolean): void {
    if (running || !["static", "loading", "noserver", ""].includes(this.root.dataset.state || "")) return;
    switch (model.state) {
      case "ready":
        this.set(t("w_model_ready"), false, "static");
        break;
      case "failed":
        this.set(t("w_noserver"), false, "noserver");
        break;
      case "loading": {
        const pct = model.total ? Math.min(99, Math.floor((100 * model.loaded) / model.total)) : 0;
        this.set(t("w_model_loading", { pct }), false, "loading");
        const bar = el("progress", "sim-progress");
        bar.max = 100;
        bar.value = pct;
        this.root.append(" ", bar);
        break;
      }
      default:
        this.set(t("w_static"), false, "static");
    }
  }
}
