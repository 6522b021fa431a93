// The widget's tooltip: one element per widget, which every chart fills
// through a Tip (chart.ts) as the pointer moves over it, placed beside the
// pointer within the widget's figure.
import { el } from "./canvas";
import type { Tip } from "./chart";

export class Tooltip {
  readonly root = el("div", "sim-tooltip");

  constructor(private fig: HTMLElement) {
    this.root.hidden = true;
    this.root.setAttribute("role", "tooltip");
  }

  // show is the Tip the charts are given.
  readonly show: Tip = (html, e) => {
    const tip = this.root;
    if (!html || !e) {
      tip.hidden = true;
      return;
    }
    tip.innerHTML = html;
    tip.hidden = false;
    const fr = this.fig.getBoundingClientRect();
    const w = tip.offsetWidth;
    let x = e.clientX - fr.left + 14;
    if (x + w > fr.width - 4) x = e.clientX - fr.left - w - 14;
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = e.clientY - fr.top + 14 + "px";
  };
}
