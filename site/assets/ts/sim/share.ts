// What a reader takes away from a block: the command that runs its state in
// a terminal (shown under the buttons, Copy), and a link that opens the page
// with that state and runs it (Copy link, and the address bar after a run;
// the link's form is link.ts's).
import { el } from "./canvas";
import type { Controls } from "./controls";
import { shellQuote } from "./helpers";
import { t } from "./i18n";
import { blockQuery, withBlock } from "./link";
import type { BlockData } from "./types";

export class Share {
  readonly cmdEl = el("code", "sim-cmd-text");
  readonly copyBtn = el("button", "sim-copy", t("w_copy"));
  readonly linkBtn = el("button", "sim-copy-link", t("w_copy_link"));
  private readonly block: string;

  constructor(private fig: HTMLElement, private data: BlockData, private controls: Controls) {
    this.block = data.block;
    this.copyBtn.type = this.linkBtn.type = "button";
    this.copyBtn.addEventListener("click", () => this.copy());
    this.linkBtn.addEventListener("click", () => this.copyLink());
    this.linkBtn.title = t("w_copy_link_title");
  }

  private command(): string {
    const parts = ["go run ./sim/cmd/sim run --block", this.block];
    for (const [k, v] of Object.entries(this.controls.params())) parts.push("--set", shellQuote(k + "=" + (typeof v === "string" ? v : JSON.stringify(v))));
    const seed = this.controls.seedValue();
    if (seed !== undefined) parts.push("--seed", String(seed));
    parts.push(this.data.file);
    return parts.join(" ");
  }

  // update shows the command for the controls' values.
  update(): void {
    this.cmdEl.textContent = this.command();
  }

  // linkQuery is the block's state as a link's query.
  private linkQuery(): string {
    return blockQuery(this.block, this.controls.params(), this.controls.seedValue() ?? 1);
  }

  // link is an address that opens this page with the block's state and
  // runs it.
  link(): string {
    return new URL("?" + this.linkQuery() + "#sim-" + this.block, location.href).href;
  }

  // remember puts the state of a run someone asked for into the address,
  // so the address bar is a link to it too.
  remember(): void {
    try {
      history.replaceState(history.state, "", withBlock(location.search, this.block, this.linkQuery()) + location.hash || location.pathname);
    } catch {
      /* a file:// page may refuse */
    }
  }

  private async copyLink(): Promise<void> {
    const text = this.link();
    this.fig.dataset.link = text;
    try {
      await navigator.clipboard.writeText(text);
      this.linkBtn.textContent = t("w_copied");
    } catch {
      this.cmdEl.textContent = text;
      this.linkBtn.textContent = t("w_copy_failed");
      setTimeout(() => this.update(), 4000);
    }
    setTimeout(() => (this.linkBtn.textContent = t("w_copy_link")), 1800);
  }

  private async copy(): Promise<void> {
    const text = this.command();
    try {
      await navigator.clipboard.writeText(text);
      this.copyBtn.textContent = t("w_copied");
    } catch {
      const r = document.createRange();
      r.selectNodeContents(this.cmdEl);
      const sel = window.getSelection();
      sel?.removeAllRanges();
      sel?.addRange(r);
      this.copyBtn.textContent = t("w_copy_failed");
    }
    setTimeout(() => (this.copyBtn.textContent = t("w_copy")), 1800);
  }
}
