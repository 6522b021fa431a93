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
import { firstRun, Widget } from "./sim/widget";

function start(): void {
  performance.mark("connlab:start");
  // Ask at once whether a server answers: the answer comes back while the
  // widgets are built. The model's worker asks too and, without a server,
  // loads the model meanwhile.
  const hostP = document.querySelector("figure.sim") ? host() : null;
  if (hostP) model.preload();
  loadStrings(document);
  // The blocks' data, and the widgets built from it. A widget is built at
  // once for a block in the view (or opened from a link); the others
  // after the first run of those (buildLater, below). Building a widget
  // (its controls, panes and charts, which the page then lays out) for a
  // block the reader cannot see yet only delayed the block in view.
  const widgets = new Map<string, Widget>();
  const blocks = new Map<string, { fig: HTMLElement; data: BlockData }>();
  for (const fig of document.querySelectorAll<HTMLElement>("figure.sim")) {
    const script = fig.querySelector("script.sim-data");
    if (!script) continue;
    try {
      const data: BlockData = JSON.parse(script.textContent || "");
      blocks.set(data.block, { fig, data });
    } catch {
      continue;
    }
  }
  const links = parseLinks(location.search);
  // Every block's widget is built (tests wait for it).
  const built = () => (document.documentElement.dataset.simWidgets = "all");
  if (!blocks.size) built();
  // The page's lab, as the first block has it: the model loads it first.
  const lab = blocks.values().next().value?.data;
  // What the page knows so far, for a widget built late: whether a server
  // answered ("live", "none", or not yet), and whether runs have begun.
  let server = "";
  let begun = false;
  const inView = new Set<Widget>();
  const auto = (w: Widget) => {
    if (w.idle()) void w.run("model", true);
  };
  // Small blocks run by themselves when they come into view, once runs
  // can go somewhere (begin, below); before then, the page remembers them.
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
  // Builds the widget of a block that comes near the view.
  let near: IntersectionObserver | null = null;
  // build makes a block's widget, once, and brings it to the page's state.
  const build = (block: string): Widget | undefined => {
    const b = blocks.get(block);
    if (!b) return widgets.get(block);
    blocks.delete(block);
    near?.unobserve(b.fig);
    if (!blocks.size) built();
    let w: Widget;
    try {
      w = new Widget(b.fig, b.data);
    } catch (e) {
      console.error("sim widget " + block, e);
      return undefined;
    }
    widgets.set(block, w);
    performance.mark("connlab:built:" + block);
    const st = links.get(block);
    if (st) w.restore(st);
    if (w.small()) seen.observe(w.element);
    if (server === "none") w.noServer();
    if (begun && w.linked) void w.run("model", false, true);
    return w;
  };
  // A printed page shows every widget (and sim/canvas.ts then draws their
  // charts: this listener comes first).
  window.addEventListener("beforeprint", () => {
    for (const block of [...blocks.keys()]) build(block);
  });
  // The view at start: the top of the page, or what the address points at
  // (the browser scrolls there after this). The blocks in it are built now;
  // all positions are read before any is built.
  let target: HTMLElement | null = null;
  try {
    target = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  } catch {
    target = null; // a malformed fragment
  }
  const top = (target ? target.getBoundingClientRect().top : 0) + scrollY;
  const first = [...blocks].filter(([block, b]) => {
    const r = b.fig.getBoundingClientRect();
    return links.has(block) || b.fig.contains(target) || (r.top + scrollY < top + innerHeight && r.bottom + scrollY > top);
  });
  for (const [block] of first) build(block);
  // The others are built once the blocks in view have had their first
  // run, or none was started: a block within a screen of the view at
  // once, and the rest one per moment the page is idle.
  const buildRest = () => {
    const next = blocks.keys().next();
    if (next.done) return;
    build(next.value);
    if (blocks.size) requestIdle(buildRest);
  };
  // buildLater starts that, once (near is its observer).
  const buildLater = () => {
    if (near || !blocks.size) return;
    near = new IntersectionObserver((entries) => {
      for (const e of entries) if (e.isIntersecting) build((e.target as HTMLElement).dataset.simBlock || "");
    }, { rootMargin: "100% 0px" });
    for (const b of blocks.values()) near.observe(b.fig);
    requestIdle(buildRest);
  };
  // after calls buildLater once a run started now has finished, or at once
  // when none was; and in any case within a few seconds of the start
  // (a run may fail, or the host's probe never answer).
  const after = (ran: boolean) => {
    const go = () => requestIdle(buildLater);
    if (ran) void firstRun.then(go);
    else go();
  };
  setTimeout(() => after(false), 3000);
  performance.mark("connlab:widgets");
  // Another widget of the page (an exercise) asks for a run.
  document.addEventListener("connlab:run", (e) => {
    const d = (e as CustomEvent).detail || {};
    const w = build(d.block);
    if (!w) return;
    w.setParams(d.params || {});
    void w.run(d.mode === "real" ? "real" : "model");
  });
  // Find out early whether a server answers, so the page can say so. Once
  // runs can go somewhere, blocks opened from a link run, and a small block
  // runs by itself when it comes into view, so the reader finds live
  // results (one block at a time, not the whole page at once). Which blocks
  // are in view is known before then: the block the reader sees runs as
  // soon as the model can, not a frame later.
  const begin = () => {
    begun = true;
    // A small block built now is in the view: it runs now, or when the
    // observer above reports it (the model may be ready before the page's
    // first frame).
    const ran = [...widgets.values()].some((w) => w.linked || (w.small() && w.idle()));
    for (const w of widgets.values()) if (w.linked) void w.run("model", false, true);
    for (const w of widgets.values()) if (inView.has(w)) auto(w);
    inView.clear();
    after(ran);
  };
  if (lab && hostP) {
    void hostP.then(async (h) => {
      performance.mark("connlab:probed");
      const live = h.server && (await socket.connect());
      server = live ? "live" : "none";
      document.documentElement.dataset.simServer = server;
      if (live) {
        begin();
        return;
      }
      for (const w of widgets.values()) w.noServer();
      if (!model.available()) {
        after(false);
        return;
      }
      // The model loads now that the page is readable: a worker fetches
      // and compiles it off the page's thread, so the page's first paint
      // and its own resources do not wait for it; the page's lab (its data)
      // is fetched meanwhile.
      model.onProgress(() => {
        for (const w of widgets.values()) w.modelStatus();
      });
      document.documentElement.dataset.simModel = "loading";
      void model.source(lab.lab, "en", lab.data);
      const ok = await model.load();
      document.documentElement.dataset.simModel = ok ? "ready" : "failed";
      for (const w of widgets.values()) w.modelStatus();
      if (ok) begin();
      else after(false);
    });
  } else {
    after(false);
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

// requestIdle calls f when the page is next idle (within a second), or
// soon where the browser cannot say (Safari).
function requestIdle(f: () => void): void {
  if (typeof requestIdleCallback === "function") requestIdleCallback(f, { timeout: 1000 });
  else setTimeout(f, 50);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
