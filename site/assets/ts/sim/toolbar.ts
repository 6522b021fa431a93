// The widget's toolbar, above its charts: the block's parameters as
// controls and its fixed keys, the buttons (Run, Run real, Cancel, Reset,
// Copy, Copy link) and the Align box, the command line, and the status.
import { el } from "./canvas";
import type { Controls } from "./controls";
import { t } from "./i18n";
import type { Share } from "./share";
import type { Status } from "./status";
import type { VariantData } from "./store";
import type { BlockData } from "./types";

// What the toolbar's buttons do.
export interface Actions {
  run(mode: "model" | "real"): void;
  cancel(): void;
  align(): void; // the reader ticked or cleared Align
}

export class Toolbar {
  readonly root = el("div", "sim-toolbar");
  readonly runBtn = el("button", "sim-run", t("w_run"));
  readonly realBtn = el("button", "sim-run-real", t("w_run_real"));
  readonly cancelBtn = el("button", "sim-cancel", t("w_cancel"));
  private realNote = el("p", "sim-real-note");
  private align = el("input");
  private alignSet = false; // the reader chose; until then, many rows align

  constructor(data: BlockData, controls: Controls, share: Share, status: Status, on: Actions) {
    const bar = this.root;
    if (controls.fields.length) {
      bar.append(el("p", "sim-section", t("w_params")), controls.root);
    }
    const fixed = Object.entries(data.fixed || {});
    if (fixed.length) {
      const p = el("p", "sim-fixed", t("w_fixed") + ": ");
      for (const [k, v] of fixed) p.append(el("code", "", k + " = " + JSON.stringify(v)), " ");
      bar.append(p);
    }
    const actions = el("div", "sim-actions");
    this.runBtn.type = this.realBtn.type = this.cancelBtn.type = "button";
    this.runBtn.title = t("w_run_title");
    this.realBtn.title = t("w_run_real_title");
    this.cancelBtn.hidden = true;
    const reset = el("button", "sim-reset", t("w_reset"));
    reset.type = "button";
    this.runBtn.addEventListener("click", () => on.run("model"));
    this.realBtn.addEventListener("click", () => on.run("real"));
    this.cancelBtn.addEventListener("click", () => on.cancel());
    reset.addEventListener("click", () => {
      controls.reset();
      share.update();
    });
    const alignLabel = el("label", "sim-align");
    this.align.type = "checkbox";
    this.align.addEventListener("change", () => {
      this.alignSet = true;
      on.align();
    });
    alignLabel.append(this.align, " " + t("w_align"));
    actions.append(this.runBtn, this.realBtn, this.cancelBtn, reset, share.copyBtn, share.linkBtn, alignLabel);
    bar.append(actions);
    this.realNote.hidden = true;
    bar.append(this.realNote);
    const cmd = el("p", "sim-cmd");
    cmd.append(share.cmdEl);
    bar.append(cmd);
    bar.append(status.root, status.notes);
  }

  // aligned reports whether the waterfalls draw each call from its own
  // start: as the reader chose, or, until they do, when a variant has many
  // calls.
  aligned(vs: VariantData[]): boolean {
    if (!this.alignSet) this.align.checked = vs.some((d) => d.calls.length > 200);
    return this.align.checked;
  }

  // noServer hides Run real and says what it needs.
  noServer(): void {
    this.realBtn.hidden = true;
    this.realNote.replaceChildren(t("w_real_needs_server") + " ", el("code", "", "make serve"));
    this.realNote.hidden = false;
  }
}
