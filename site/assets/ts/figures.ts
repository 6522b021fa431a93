// Explorable figures, drawn from the model's numbers for a ```sim block of
// the same page:
//
//   - the packet ladder ({{< ladder block="call" >}}, figures/ladder.ts):
//     every packet of one call between client and server, to the time
//     scale of the call's curl times, redrawn from the block's runs.
//   - the port grid ({{< portgrid block="exhaust" >}}, figures/ports.ts):
//     the local port range filling with TIME_WAIT and draining, from the
//     block's build-time time series, at any second of the run.
//
// This file finds them when the page loads.
import { Ladder } from "./figures/ladder";
import { PortGrid } from "./figures/ports";

function start(): void {
  for (const f of document.querySelectorAll<HTMLElement>("figure.fig-ladder")) {
    try {
      new Ladder(f);
    } catch (e) {
      console.error("ladder", e);
    }
  }
  for (const f of document.querySelectorAll<HTMLElement>("figure.fig-ports")) {
    try {
      new PortGrid(f);
    } catch (e) {
      console.error("port grid", e);
    }
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
