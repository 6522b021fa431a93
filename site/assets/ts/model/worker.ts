// The model's Web Worker: Go's wasm_exec.js is put before this file (one
// fingerprinted script, layouts/_partials/model-config.html). It loads the
// .wasm with progress, starts it, and passes the page's messages (JSON
// text) to the Go side's connlabHandle; the Go side answers through
// connlabPost, straight to the page.
declare const Go: new () => { importObject: WebAssembly.Imports; env: Record<string, string>; run(i: WebAssembly.Instance): Promise<void> };

const scope = self as unknown as {
  connlabPost: (s: string) => void;
  connlabReady: () => void;
  connlabHandle?: (s: string) => void;
  postMessage: (m: unknown) => void;
  onmessage: ((e: MessageEvent) => void) | null;
};

// now is the time on the page's clock (its performance timeline): the
// page marks the worker's steps when they happened, not when its own
// thread got round to the message.
const now = () => performance.timeOrigin + performance.now();

// The page's messages until the model runs (and has read the page's lab).
const queue: string[] = [];
let holding = true;
let started = false;
// The page's lab, fetched while the model loads: the model reads it first,
// answering to the id "boot-lab" (model/client.ts).
let bootLab: Promise<string> | null = null;

scope.connlabPost = (s: string) => scope.postMessage(s);
scope.connlabReady = () => {
  scope.postMessage({ type: "ready", at: now() });
  void (async () => {
    if (bootLab) {
      const msg = await bootLab;
      bootLab = null;
      scope.connlabHandle!(msg);
    }
    holding = false;
    for (const m of queue.splice(0)) scope.connlabHandle!(m);
  })();
};

scope.postMessage({ type: "up", at: now() });

// Init is what the worker loads: the page's model config as the page has
// it (layouts/_partials/model-config.html), the page's address its
// addresses are relative to, and whether to ask the probe first (a
// preload). Both the page's head and model/client.ts send it so.
interface Config { wasm: string; bytes: number; probe: string; lab?: { lab: string; url: string } }
interface Init { type?: string; config: Config; base: string; probe: boolean }

scope.onmessage = (e: MessageEvent) => {
  const d = e.data;
  if (typeof d === "string") {
    if (scope.connlabHandle && !holding) scope.connlabHandle(d);
    else queue.push(d);
    return;
  }
  if (d && d.type === "init") init(d);
};

function init(m: Init): void {
  if (started) return;
  started = true;
  void (async () => {
    const c = m.config;
    const abs = (u: string) => new URL(u, m.base).href;
    // The page's lab in English, as the widgets read it (sim.ts); the
    // exercises ask for theirs in the page's language themselves.
    const d = {
      wasm: abs(c.wasm),
      bytes: c.bytes,
      probe: m.probe ? abs(c.probe) : "",
      lab: c.lab && { lab: c.lab.lab, lang: "en", url: abs(c.lab.url) },
    };
    // A preload asks the probe (model/client.ts) and stops when a server
    // answers: the page then runs on the server. The model's fetch starts
    // at the same time, and stops then.
    const stop = new AbortController();
    const resp = fetch(d.wasm, { signal: stop.signal });
    resp.catch(() => {}); // a stopped fetch is no error
    const lab = d.lab;
    if (lab) {
      bootLab = fetch(lab.url, { signal: stop.signal })
        .then((r) => (r.ok ? r.text() : Promise.reject(new Error(lab.url + ": HTTP " + r.status))))
        .then(
          (text) => JSON.stringify({ type: "lab", id: "boot-lab", lab: lab.lab, lang: lab.lang, text }),
          (err) => JSON.stringify({ type: "error", id: "boot-lab", message: String(err) }),
        );
    }
    if (d.probe && (await askHost(d.probe)).server) {
      stop.abort();
      bootLab = null;
      started = false;
      scope.postMessage({ type: "server" });
      return;
    }
    await start(d.wasm, d.bytes, await resp);
  })().catch((err) => scope.postMessage({ type: "failed", message: String(err) }));
}

// The page may give the init in the worker's address (after #), so that
// the worker starts at once: a message from the page reaches a starting
// worker only when the page's thread is free to pass it on.
if (location.hash.length > 1) {
  try {
    init(JSON.parse(decodeURIComponent(location.hash.slice(1))));
  } catch (err) {
    scope.postMessage({ type: "failed", message: "the worker's address: " + String(err) });
  }
}

// askHost asks the probe (api/server.json) whether sim serve served the
// page, and tells the page (model/client.ts host), which then need not
// ask itself; no answer means no server.
async function askHost(url: string): Promise<{ server: boolean }> {
  let h = { server: false, real: false, class: false };
  try {
    const r = await fetch(url, { cache: "no-store", headers: { Accept: "application/json" } });
    if (r.ok) {
      const j = await r.json();
      h = { server: !!j.server, real: !!j.real, class: !!j.class };
    }
  } catch {
    // no answer (a network error): no server, as for the page's own fetch
  }
  scope.postMessage({ type: "host", ...h });
  return h;
}

// start reads the .wasm's response, reporting progress, and runs it. A
// host that serves it as application/wasm lets the browser compile while
// it downloads (and cache the compiled code); another type is compiled
// from the bytes once they are all here.
async function start(url: string, bytes: number, resp: Response): Promise<void> {
  if (!resp.ok) throw new Error(url + ": HTTP " + resp.status);
  const total = bytes || Number(resp.headers.get("Content-Length")) || 0;
  const go = new Go();
  // A re-run allocates a few megabytes that die with it: Go's collector
  // runs at five times the live heap rather than twice (within 64 MiB),
  // about one collection fewer per re-run on the worker's one thread.
  go.env = { GOGC: "400", GOMEMLIMIT: "64MiB" };
  const wasmType = (resp.headers.get("Content-Type") || "").split(";")[0].trim() === "application/wasm";
  let result: WebAssembly.WebAssemblyInstantiatedSource;
  if (wasmType && resp.body && WebAssembly.instantiateStreaming) {
    const counted = resp.clone();
    void count(counted.body!, total, false);
    result = await WebAssembly.instantiateStreaming(resp, go.importObject);
  } else {
    const buf = resp.body ? await count(resp.body, total, true) : new Uint8Array(await resp.arrayBuffer());
    result = await WebAssembly.instantiate(buf, go.importObject);
  }
  scope.postMessage({ type: "compiled", at: now() });
  void go.run(result.instance);
}

// count reads a body to its end, posting progress, and returns its bytes
// (when keep).
async function count(body: ReadableStream<Uint8Array>, total: number, keep: boolean): Promise<Uint8Array<ArrayBuffer>> {
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let loaded = 0;
  let last = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (keep) parts.push(value);
    loaded += value.length;
    const now = performance.now();
    if (now - last > 50) {
      last = now;
      scope.postMessage({ type: "progress", loaded, total });
    }
  }
  scope.postMessage({ type: "progress", loaded, total: Math.max(total, loaded) });
  const out = new Uint8Array(loaded);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
