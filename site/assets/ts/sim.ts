// The sim widget: every ```sim block of the page (rendered by
// layouts/_markup/render-codeblock-sim.html) becomes a live scenario that
// runs on the local sim server (sim/server/PROTOCOL.md), or, on a static
// host, on the model in the page (model/client.ts), loaded after the page.
// Without either, the block's TOML and the build-time results stay as
// they are. A link's query restores blocks' states and runs them
// (sim/link.ts).
import { host, model } from "./model/client";
import { loadStrings } from "./sim/i18n";
import { parseLinks } from "./sim/link";
import { socket } from "./sim/socket";
import type { BlockData } from "./sim/types";
import { Widget } from "./sim/widget";

function start(): void {
  performance.mark("connlab:start");
  // Ask at once whether a server answers: the answer comes back while the
  // widgets are built. The model's worker asks too and, without a server,
  // loads the model meanwhile.
  const hostP = document.querySelector("figure.sim") ? host() : null;
  if (hostP) model.preload();
  loadStrings(document);
  const widgets = new Map<string, Widget>();
  for (const fig of document.querySelectorAll<HTMLElement>("figure.sim")) {
    const script = fig.querySelector("script.sim-data");
    if (!script) continue;
    let data: BlockData;
    try {
      data = JSON.parse(script.textContent || "");
    } catch {
      continue;
    }
    try {
      widgets.set(data.block, new Widget(fig, data));
    } catch (e) {
      console.error("sim widget " + data.block, e);
    }
  }
  performance.mark("connlab:widgets");
  // Another widget of the page (an exercise) asks for a run.
  document.addEventListener("connlab:run", (e) => {
    const d = (e as CustomEvent).detail || {};
    const w = widgets.get(d.block);
    if (!w) return;
    w.setParams(d.params || {});
    void w.run(d.mode === "real" ? "real" : "model");
  });
  for (const [block, st] of parseLinks(location.search)) widgets.get(block)?.restore(st);
  // Find out early whether a server answers, so the page can say so. Once
  // runs can go somewhere, blocks opened from a link run, and a small block
  // runs by itself when it comes into view, so the reader finds live
  // results (one block at a time, not the whole page at once). Which blocks
  // are in view is known before then: the block the reader sees runs as
  // soon as the model can, not a frame later.
  let begun = false;
  const inView = new Set<Widget>();
  const auto = (w: Widget) => {
    if (w.idle()) void w.run("model", true);
  };
  const seen = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      seen.unobserve(e.target);
      const w = widgets.get((e.target as HTMLElement).dataset.simBlock || "");
      if (!w) continue;
      if (begun) auto(w);
      else inView.add(w);
    }
  }, { rootMargin: "100px" });
  for (const w of widgets.values()) if (w.small()) seen.observe(w.element);
  const begin = () => {
    begun = true;
    for (const w of widgets.values()) if (w.linked) void w.run("model", false, true);
    for (const w of widgets.values()) if (inView.has(w)) auto(w);
    inView.clear();
  };
  if (widgets.size && hostP) {
    void hostP.then(async (h) => {
      performance.mark("connlab:probed");
      const live = h.server && (await socket.connect());
      document.documentElement.dataset.simServer = live ? "live" : "none";
      if (live) {
        begin();
        return;
      }
      for (const w of widgets.values()) w.noServer();
      if (!model.available()) return;
      // The model loads now that the page is readable: a worker fetches
      // and compiles it off the page's thread, so the page's first paint
      // and its own resources do not wait for it; the page's lab (its data)
      // is fetched meanwhile.
      model.onProgress(() => {
        for (const w of widgets.values()) w.modelStatus();
      });
      document.documentElement.dataset.simModel = "loading";
      const first = widgets.values().next().value!;
      void model.source(first.lab, "en", first.dataURL);
      const ok = await model.load();
      document.documentElement.dataset.simModel = ok ? "ready" : "failed";
      for (const w of widgets.values()) w.modelStatus();
      if (ok) begin();
    });
  }
  // A printed lab (a worksheet) shows each scenario's TOML.
  const opened: HTMLDetailsElement[] = [];
  window.addEventListener("beforeprint", () => {
    for (const d of document.querySelectorAll<HTMLDetailsElement>("figure.sim details.sim-source:not([open])")) {
      d.open = true;
      opened.push(d);
    }
  });
  window.addEventListener("afterprint", () => {
    for (const d of opened.splice(0)) d.open = false;
  });
  (window as unknown as { connlabSim: unknown }).connlabSim = { widgets, socket, model };
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
