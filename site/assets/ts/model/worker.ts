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

const queue: string[] = [];
let started = false;

scope.connlabPost = (s: string) => scope.postMessage(s);
scope.connlabReady = () => {
  scope.postMessage({ type: "ready" });
  for (const m of queue.splice(0)) scope.connlabHandle!(m);
};

scope.onmessage = (e: MessageEvent) => {
  const d = e.data;
  if (typeof d === "string") {
    if (scope.connlabHandle) scope.connlabHandle(d);
    else queue.push(d);
    return;
  }
  if (d && d.type === "init" && !started) {
    started = true;
    void (async () => {
      // A preload asks the probe first (model/client.ts) and stops when a
      // server answers: the page then runs on the server.
      if (d.probe && (await serverAnswers(d.probe))) {
        started = false;
        scope.postMessage({ type: "server" });
        return;
      }
      await start(d.wasm, d.bytes);
    })().catch((err) => scope.postMessage({ type: "failed", message: String(err) }));
  }
};

// serverAnswers asks the probe (api/server.json) whether sim serve served
// the page; no answer means no server.
async function serverAnswers(url: string): Promise<boolean> {
  try {
    const r = await fetch(url, { cache: "no-store", headers: { Accept: "application/json" } });
    return r.ok && !!(await r.json()).server;
  } catch {
    return false;
  }
}

// start fetches the .wasm, reporting progress, and runs it. A host that
// serves it as application/wasm lets the browser compile while it
// downloads (and cache the compiled code); another type is compiled from
// the bytes once they are all here.
async function start(url: string, bytes: number): Promise<void> {
  const resp = await fetch(url);
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
  scope.postMessage({ type: "compiled" });
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
