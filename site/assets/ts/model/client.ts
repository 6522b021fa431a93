// The model in the page: on a static host (no sim server), a Web Worker
// runs the WebAssembly build of the model (sim/cmd/simwasm, package
// sim/wasm) and answers the run messages of sim/server/PROTOCOL.md as the
// server would, from the same Go code. The page loads it only when no
// server answers, after the page itself; both bundles (sim.js and
// exercises.js) share one worker through window.connlabModel.
//
// Which host serves the page: api/server.json is a static file saying
// {"server": false}; sim serve answers the same path itself. Asking it
// fails on no host, so a static host's console stays free of errors (a
// WebSocket to a missing /ws would log one).

import type { ClientMsg, ExercisesMsg, RunMsg, ServerMsg } from "../sim/types";

export interface Host { server: boolean; real: boolean; class: boolean }

interface Config { worker: string; wasm: string; bytes: number; probe: string; lab?: { lab: string; url: string } }

// The worker the page's head started, and the events it sent before the
// page took it over.
interface Boot { worker: Worker; queue: (MessageEvent | ErrorEvent)[] }

// A reply of the model: a message of PROTOCOL.md, or a lab or exercises
// reply (sim/wasm).
type Handler = (m: ServerMsg) => void;
export type Progress = (loaded: number, total: number) => void;

function config(): Config | null {
  const el = document.getElementById("connlab-model");
  if (!el) return null;
  try {
    return JSON.parse(el.textContent || "");
  } catch {
    return null;
  }
}

let hostP: Promise<Host> | null = null;

// host finds out once per page whether sim serve served it. The worker
// the page's head started asks the probe itself; its answer is taken, and
// the page asks only when there is no such worker or it failed first.
export function host(): Promise<Host> {
  if (hostP) return hostP;
  const shared = (window as unknown as { connlabHost?: Promise<Host> });
  if (shared.connlabHost) return (hostP = shared.connlabHost);
  const none: Host = { server: false, real: false, class: false };
  const c = config();
  const ask = (): Promise<Host> =>
    fetch(c!.probe, { cache: "no-store", headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json() : none))
      .then((j) => ({ server: !!j.server, real: !!j.real, class: !!j.class }))
      .catch(() => none);
  if (!c || !/^https?:$/.test(location.protocol)) hostP = Promise.resolve(none);
  else {
    const told = model.bootHost();
    hostP = told ? told.then((h) => h || ask()) : ask();
  }
  shared.connlabHost = hostP;
  return hostP;
}

export class Model {
  state: "idle" | "loading" | "ready" | "failed" = "idle";
  error = "";
  loaded = 0;
  total = 0;
  private worker: Worker | null = null;
  private ready: Promise<boolean> | null = null;
  private handlers = new Map<string, Handler>();
  private progress = new Set<Progress>();
  private sources = new Map<string, Promise<boolean>>();
  private seq = 0;

  // available reports whether this build of the site carries the model.
  available(): boolean {
    return !!config() && typeof Worker !== "undefined" && typeof WebAssembly !== "undefined";
  }

  onProgress(f: Progress): () => void {
    this.progress.add(f);
    return () => this.progress.delete(f);
  }

  private hostTold: ((h: Host | null) => void) | null = null;

  // bootHost takes over the worker the page's head started, which asks
  // the probe as it starts, and resolves with its answer (null when the
  // worker failed before it answered). Null without such a worker.
  bootHost(): Promise<Host | null> | null {
    if (!(window as unknown as { connlabBoot?: Boot }).connlabBoot) return null;
    const p = new Promise<Host | null>((resolve) => (this.hostTold = resolve));
    this.preload();
    // Not taken over (no model in this build after all): the page asks.
    if ((window as unknown as { connlabBoot?: Boot }).connlabBoot) this.tellHost(null);
    return p;
  }

  private tellHost(h: Host | null): void {
    this.hostTold?.(h);
    this.hostTold = null;
  }

  // preload starts the worker as the page starts, before the page knows
  // whether a server answers: the worker asks the probe itself and, on a
  // static host, fetches and compiles the model off the page's thread, so
  // the model does not wait for the page's own work (building and drawing
  // its widgets). With a server it fetches nothing more.
  preload(): void {
    const c = config();
    if (this.worker || this.ready || !c || !this.available()) return;
    this.spawn(c, true);
  }

  // load starts the model (once, or takes the preloaded worker on); true
  // when the model runs.
  load(): Promise<boolean> {
    if (this.ready) return this.ready;
    const c = config();
    if (!c || !this.available()) {
      this.state = "failed";
      this.error = "no model in this build";
      return (this.ready = Promise.resolve(false));
    }
    if (this.state === "ready" || this.state === "failed") return (this.ready = Promise.resolve(this.state === "ready"));
    this.state = "loading";
    this.total = c.bytes;
    this.ready = new Promise((resolve) => (this.settle = resolve));
    if (!this.worker) this.spawn(c, false);
    else if (this.probedServer) {
      this.probedServer = false;
      this.startWorker(this.worker, c);
    }
    return this.ready;
  }

  private settle: ((ok: boolean) => void) | null = null;
  private probedServer = false;

  // initMessage is what the worker loads (worker.ts): the page's config as
  // it stands, resolved there against the page's address, as the page's
  // head sends it too (model-config.html).
  private initMessage(c: Config, probe: boolean): Record<string, unknown> {
    return { type: "init", config: c, base: location.href, probe };
  }

  // startWorker sends the worker its init; the model's answer to the
  // page's lab, which the worker loads first, comes as "boot-lab" (see
  // source).
  private startWorker(w: Worker, c: Config): void {
    this.expectBootLab(c);
    w.postMessage(this.initMessage(c, false));
  }

  private bootLab: { key: string; url: string; reply: Promise<ServerMsg> } | null = null;

  private expectBootLab(c: Config): void {
    if (!c.lab) return;
    const url = new URL(c.lab.url, location.href).href;
    const reply = new Promise<ServerMsg>((resolve) => this.handlers.set("boot-lab", (m) => {
      this.handlers.delete("boot-lab");
      resolve(m);
    }));
    this.bootLab = { key: c.lab.lab + " en", url, reply };
  }

  // spawn starts the worker, with what to load in its address (worker.ts);
  // with probe, it loads the model only if no server answers. A worker
  // that the page's head started (connlabBoot, model-config.html) is taken
  // over instead, with what it has said so far: it was started with the
  // probe, and a load() that finds a server answering asks it again
  // (news, "server").
  private spawn(c: Config, probe: boolean): void {
    const g = window as unknown as { connlabBoot?: Boot };
    const boot = g.connlabBoot;
    delete g.connlabBoot;
    let w: Worker;
    this.expectBootLab(c);
    if (boot) w = boot.worker;
    else {
      try {
        w = new Worker(c.worker + "#" + encodeURIComponent(JSON.stringify(this.initMessage(c, probe))));
      } catch (e) {
        this.state = "failed";
        this.error = String(e);
        this.settle?.(false);
        return;
      }
      performance.mark("connlab:model-load");
    }
    this.worker = w;
    const onMessage = (e: MessageEvent) => {
      const d = e.data;
      if (typeof d === "string") this.dispatch(d);
      else this.news(d);
    };
    const onError = (e: ErrorEvent) => {
      this.state = "failed";
      this.error = e.message || "the model's worker failed";
      e.preventDefault();
      this.tellHost(null);
      this.settle?.(false);
    };
    w.onmessage = onMessage;
    w.onerror = onError;
    for (const e of boot?.queue.splice(0) || []) {
      if (e instanceof MessageEvent) onMessage(e);
      else onError(e);
    }
  }

  // news handles the worker's messages about loading.
  private news(d: { type?: string; loaded?: number; total?: number; message?: string; at?: number } & Partial<Host>): void {
    // The worker's steps in the page's timeline, at the time they happened
    // there (benchmarks read them).
    const mark = (name: string) => {
      const at = (d.at || 0) - performance.timeOrigin;
      performance.mark(name, at > 0 && at <= performance.now() ? { startTime: at } : undefined);
    };
    switch (d && d.type) {
      case "up":
        mark("connlab:model-worker");
        break;
      case "host":
        this.tellHost({ server: !!d.server, real: !!d.real, class: !!d.class });
        break;
      case "server":
        // The preload stopped: a server answers. A load() meanwhile
        // still wants the model.
        if (this.ready && this.worker) this.startWorker(this.worker, config()!);
        else this.probedServer = true;
        break;
      case "progress":
        if (this.state === "idle") this.state = "loading";
        this.loaded = d.loaded || 0;
        this.total = d.total || this.total;
        for (const f of this.progress) f(this.loaded, this.total);
        break;
      case "compiled":
        mark("connlab:model-compiled");
        break;
      case "ready":
        this.state = "ready";
        mark("connlab:model-ready");
        this.settle?.(true);
        break;
      case "failed":
        this.state = "failed";
        this.error = String(d.message || "");
        this.tellHost(null);
        this.settle?.(false);
        break;
    }
  }

  private dispatch(data: string): void {
    // Tests and benchmarks may keep the replies as they came (events aside).
    const trace = (window as unknown as { connlabTrace?: string[] }).connlabTrace;
    if (trace && !data.startsWith('{"type":"events"')) trace.push(data);
    let m: ServerMsg;
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    const id = typeof m.id === "string" ? m.id : "";
    const h = this.handlers.get(id);
    if (h) h(m);
  }

  private post(m: ClientMsg): void {
    this.worker?.postMessage(JSON.stringify(m));
  }

  newID(prefix: string): string {
    this.seq++;
    return (prefix + "-" + this.seq).slice(-64);
  }

  // request sends one message and resolves with its reply (or error).
  private request(m: ClientMsg): Promise<ServerMsg> {
    return new Promise((resolve) => {
      this.handlers.set(m.id, (r) => {
        this.handlers.delete(m.id);
        resolve(r);
      });
      this.post(m);
    });
  }

  // source gives the model a page's lab in a language, once: its data as
  // `sim lab --json` wrote it (the same blocks sim run and sim serve read),
  // from url. It fetches the data while the model loads and hands it to
  // the worker at once, which holds it until the model starts.
  source(lab: string, lang: string, url: string): Promise<boolean> {
    const key = lab + " " + lang;
    let p = this.sources.get(key);
    if (!p) {
      p = (async () => {
        const loaded = this.load();
        // The worker loads the page's own lab as it starts.
        const boot = this.bootLab;
        if (boot && boot.key === key && boot.url === new URL(url, location.href).href) {
          if (!(await loaded)) return false;
          const m = await boot.reply;
          if (m.type === "lab") {
            performance.mark("connlab:lab-ready");
            return true;
          }
        }
        try {
          const r = await fetch(url);
          if (!r.ok) throw new Error(url + ": HTTP " + r.status);
          const text = await r.text();
          if (this.state === "failed") return false;
          const reply = this.request({ type: "lab", id: this.newID("lab"), lab, lang, text });
          if (!(await loaded)) return false;
          const m = await reply;
          if (m.type !== "lab") throw new Error((m.type === "error" && m.message) || "the page's lab did not load");
          performance.mark("connlab:lab-ready");
          return true;
        } catch (e) {
          this.error = String(e);
          this.sources.delete(key);
          return false;
        }
      })();
      this.sources.set(key, p);
    }
    return p;
  }

  // run sends a run message (PROTOCOL.md) and routes its replies to h
  // until forget(id).
  run(msg: RunMsg, h: Handler): boolean {
    if (this.state !== "ready") return false;
    this.handlers.set(msg.id, h);
    this.post(msg);
    return true;
  }

  cancel(id: string): void {
    if (this.state === "ready") this.post({ type: "cancel", id });
  }

  forget(id: string): void {
    this.handlers.delete(id);
  }

  // exercises computes a lab's exercises for a seed (GET /exercise/api's
  // answer).
  async exercises(lab: string, lang: string, seed: number): Promise<ExercisesMsg | null> {
    const r = await this.request({ type: "exercises", id: this.newID("ex"), lab, lang, seed });
    return r.type === "exercises" ? r : null;
  }
}

// model is the page's one model, shared by its bundles.
export const model: Model = (() => {
  const w = window as unknown as { connlabModel?: Model };
  return (w.connlabModel ||= new Model());
})();
