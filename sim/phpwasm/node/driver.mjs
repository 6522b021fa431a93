// connlab's PHP 8.5 worker process: one Node process holds one PHP runtime
// (PHP 8.5 compiled to WebAssembly, @php-wasm), so the process's lifetime is
// the runtime's, as a PHP-FPM child's. It speaks the harness's worker line
// protocol on stdin/stdout (JSON lines): a {"config": ...} line, then
// {"job": ...} lines; it answers {"ready": true}, {"ev": ...} events,
// {"done": req, "fail": bool, "end": unixNanos} and {"error": "..."}.
//
// Each job runs the lab's PHP script as one request (php.run: request
// startup and shutdown), so request-scoped handles die and
// curl_share_init_persistent() handles survive into the next job.
//
// The runtime's network is replaced at three points, each where php-wasm's
// emulation differs from Linux in a way libcurl notices:
//   - sockets: every PHP socket is one real TCP connection from this process
//     to the (loopback) server, not a WebSocket to a proxy;
//   - getaddrinfo: a real DNS query to the harness's server, blocking as
//     libcurl's synchronous resolver does (php-wasm answers with a made-up
//     address at once and resolves later, in its proxy);
//   - select(): php-wasm polls a read set for POLLIN|POLLOUT, so any open
//     socket looks readable, and libcurl's dead-connection check closes every
//     idle connection it examines (FIX_SELECT below; see the findings).
import { createRequire } from 'node:module';
import { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

// Event kinds (sim.Kind).
const KIND = { call: 0, open: 1, close: 3 };

const out = (m) => process.stdout.write(JSON.stringify(m) + '\n');
// A signal ends the process through its exit handlers, which stop what it
// started (php -S, its temporary folder).
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1)));
const fail = (msg) => {
  out({ error: msg });
  process.exit(1);
};

// --- clock -------------------------------------------------------------
// PHP's hrtime() is emscripten's monotonic clock, performance.now() in this
// process; wall time is timeOrigin + performance.now().
const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
const hrToWallNs = (hr) => BigInt(Math.round(performance.timeOrigin * 1e6)) + BigInt(hr);

// sleepUntil waits until wall time t (Unix ns): a timer for most of it,
// then a short spin, so a request arrives when it is due.
async function sleepUntil(t) {
  for (;;) {
    const left = Number(t - nowNs()) / 1e6;
    if (left <= 0) return;
    if (left > 2) await new Promise((ok) => setTimeout(ok, left - 1.5));
    else await new Promise((ok) => setImmediate(ok));
  }
}

// --- config ------------------------------------------------------------
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
const it = lines[Symbol.asyncIterator]();
const first = await it.next();
if (first.done) process.exit(0);
let cfg;
try {
  cfg = JSON.parse(first.value).config;
} catch (e) {
  fail(`php driver: bad config line: ${e.message}`);
}
if (!cfg || !cfg.scenario) fail('php driver: the first line must be {"config": {...}} with a scenario');
const s = cfg.scenario;
const php = cfg.php || {};
if (!php.script) fail('php driver: config.php.script is missing (the lab script to run)');
if (!fs.existsSync(php.script)) fail(`php driver: config.php.script: no such file ${php.script}`);
const prepend = php.prepend || path.join(here, '..', 'connlab.php');
const FIX_SELECT = php.stock_select !== true;
// Every time libcurl waits, php-wasm's select() first yields to the event
// loop with emscripten_sleep(0), a setTimeout(0), which Node clamps to
// 1 ms: three or so per call on a path with no delay. A yield that costs
// nothing is setImmediate; php.timer_clamp keeps Node's clamp.
const FAST_YIELD = php.timer_clamp !== true;
if (FAST_YIELD) {
  const realSetTimeout = globalThis.setTimeout;
  const realClearTimeout = globalThis.clearTimeout;
  const probe = setImmediate(() => {});
  const Immediate = probe.constructor;
  clearImmediate(probe);
  globalThis.setTimeout = (fn, ms, ...args) => (!(ms > 0) ? setImmediate(fn, ...args) : realSetTimeout(fn, ms, ...args));
  globalThis.clearTimeout = (t) => (t instanceof Immediate ? clearImmediate(t) : realClearTimeout(t));
}
// NATIVE: php.binary names a PHP CLI (Debian's PHP 8.2, say), which runs
// the script instead of the WebAssembly runtime: one `php -S` process
// (the built-in web server, one worker) is this worker's PHP process, and
// each job is one HTTP request to it. libcurl there uses the system's
// resolver, so the API's name is given its address (CURLOPT_RESOLVE) and
// no lookup is made or timed; sockets are the kernel's, so no open or
// close events are reported.
const NATIVE = !!php.binary;

function loopback(host) {
  return /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1';
}
const upstream = cfg.upstream || '';
const [upHost, upPort] = [upstream.slice(0, upstream.lastIndexOf(':')), upstream.slice(upstream.lastIndexOf(':') + 1)];
if (!loopback(upHost)) fail(`php driver: upstream ${JSON.stringify(upstream)} is not a loopback address`);
if (cfg.dns) {
  const h = cfg.dns.slice(0, cfg.dns.lastIndexOf(':'));
  if (!loopback(h)) fail(`php driver: dns ${JSON.stringify(cfg.dns)} is not a loopback address`);
}
const apiHost = php.host || 'api.connlab.test';
const scheme = s.TLS === 'none' ? 'http' : 'https';
const url = `${scheme}://${apiHost}:${upPort}/v1/geocode`;
const worker = cfg.worker || 1;
// curl's DNS cache timeout and maximum idle age, from the (scaled)
// scenario, in the whole seconds curl takes (at least 1: 0 would turn the
// DNS cache off). The ready line says what curl got, so the model can be
// given the same.
const wholeSeconds = (ns) => (ns === undefined ? undefined : Math.max(1, Math.round(ns / 1e9)));
const curlTimers = { dns_cache_timeout: wholeSeconds(s.DNSCacheTimeout), maxage_conn: wholeSeconds(s.MaxIdleAge) };
const holdMs = (s.DNS || 0) / 1e6; // the DNS server answers at once; the wait is here (as the Go worker's resolver.hold)

// --- run clock and events --------------------------------------------
let base = null; // the run's start, Unix ns (BigInt)
const since = (wallNs) => (base === null ? 0 : Number(wallNs - base));
let quiet = false; // warm-up: its connections are not the run's
const emit = (ev) => quiet || out({ ev });

// --- sockets: the fake WebSocket that is a TCP connection ---------------
let memory = null; // the wasm memory, for socket options
let nextConn = 0;
let pendingSock = null; // the emscripten socket a URL was made for
const open = new Set();
const portOf = new Map(); // connection id → its real local port
let closeReason = 'end-of-request';

class TCPPeer extends EventEmitter {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;
  constructor(wsURL) {
    super();
    Object.assign(this, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
    this.readyState = 0;
    this.binaryType = 'arraybuffer';
    const m = /^wss?:\/\/\[?([^\]/]+?)\]?:(\d+)/.exec(wsURL);
    this.id = ++nextConn;
    this.started = nowNs();
    this.peerEOF = false;
    // curl reads the socket's local port with getsockname() when it
    // connects, before the TCP connection exists here: it gets this id,
    // which report() returns as CURLINFO_LOCAL_PORT.
    if (pendingSock) {
      pendingSock.sport = this.id;
      pendingSock.saddr = '127.0.0.1';
      pendingSock = null;
    }
    if (!m || !loopback(m[1])) {
      setImmediate(() => {
        this.readyState = 3;
        this.emit('error', new Error(`connlab: only loopback connections, not ${wsURL}`));
        this.emit('close');
      });
      return;
    }
    this.tcp = net.connect({ host: m[1], port: Number(m[2]), allowHalfOpen: true });
    open.add(this);
    this.tcp.on('connect', () => {
      this.localPort = this.tcp.localPort;
      portOf.set(this.id, this.localPort);
      this.readyState = 1;
      emit({ k: KIND.open, at: since(this.started), n: this.id, lp: this.localPort });
      this.emit('open');
    });
    this.tcp.on('data', (b) => this.emit('message', b, true));
    this.tcp.on('end', () => {
      // The server closed: reads now see end of file. The socket stays
      // half open (CLOSE_WAIT) until libcurl closes it.
      this.peerEOF = true;
      this.readyState = 3;
      this.emit('close');
    });
    this.tcp.on('error', (e) => {
      this.readyState = 3;
      this.emit('error', e);
      this.emit('close');
    });
  }
  send(data) {
    this.tcp.write(Buffer.from(data));
  }
  setSocketOpt(level, name, valuePtr) {
    const v = memory ? new Int32Array(memory.buffer)[valuePtr >> 2] : 1;
    if (level === 6 && name === 1) this.tcp?.setNoDelay(!!v);
    if (level === 1 && name === 9) this.tcp?.setKeepAlive(!!v);
  }
  close() {
    if (this.closed) return;
    this.closed = true;
    this.readyState = 3;
    if (this.tcp) {
      open.delete(this);
      const by = this.peerEOF ? 'server' : 'client';
      emit({ k: KIND.close, at: since(nowNs()), n: this.id, lp: this.localPort, by, rs: this.peerEOF ? 'closed' : closeReason });
      this.tcp.end();
      this.tcp.destroySoon?.();
    }
  }
  addEventListener(ev, f) {
    this.on(ev, f);
  }
  removeEventListener(ev, f) {
    this.off(ev, f);
  }
}

// --- DNS: a real query, answered while the main thread waits -------------
let dnsThread = null;
const dnsShared = new SharedArrayBuffer(8 + 512);
const dnsState = new Int32Array(dnsShared, 0, 2);
function startDNSThread() {
  Atomics.store(dnsState, 0, 0);
  dnsThread = new Worker(path.join(here, 'dns-worker.mjs'), { workerData: { shared: dnsShared } });
  dnsThread.unref();
  if (Atomics.wait(dnsState, 0, 0, 15000) === 'timed-out') fail('php driver: the DNS thread did not start');
}
function resolve(name) {
  if (!cfg.dns) return { addr: '127.0.0.1' }; // dns = 0: nothing to resolve
  const sent = performance.now();
  Atomics.store(dnsState, 0, 0);
  dnsThread.postMessage({ name, server: cfg.dns });
  if (Atomics.wait(dnsState, 0, 0, 15000) === 'timed-out') return { error: 'timeout' };
  const n = Atomics.load(dnsState, 1);
  const a = JSON.parse(Buffer.from(new Uint8Array(dnsShared, 8, n)).toString());
  const left = sent + holdMs - performance.now();
  if (left > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, left);
  if (a.addr && !loopback(a.addr)) return { error: `answer ${a.addr} is not a loopback address` };
  return a;
}

// --- the runtime ---------------------------------------------------------
let PHP, loadPHPRuntime, jspi, loader, wasmModule;
if (!NATIVE) {
  ({ PHP, loadPHPRuntime } = await import(require.resolve('@php-wasm/universal')));
  const node85 = await import(require.resolve('@php-wasm/node-8-5'));
  jspi = await node85.jspi();
  loader = await node85.getPHPLoaderModule();
  wasmModule = await WebAssembly.compile(fs.readFileSync(loader.dependencyFilename));
}

function patchImports(env, getExports) {
  const cstr = (p) => {
    const b = new Uint8Array(memory.buffer);
    let e = p;
    while (b[e]) e++;
    return Buffer.from(b.subarray(p, e)).toString();
  };
  let ipPtr = 0;
  const origGAI = env.getaddrinfo;
  env.getaddrinfo = (node, service, hint, res) => {
    if (node) {
      const name = cstr(node);
      if (!/^[\d.]+$/.test(name) && name.includes('.')) {
        const a = resolve(name);
        if (a.error) return -2; // EAI_NONAME: curl reports "Could not resolve host"
        const ex = getExports();
        if (!ipPtr) ipPtr = ex.malloc(16);
        new Uint8Array(memory.buffer).set(Buffer.from(a.addr + '\0'), ipPtr);
        return origGAI(ipPtr, service, hint, res);
      }
    }
    return origGAI(node, service, hint, res);
  };
  if (FIX_SELECT) {
    // php-wasm's select() polls each fd of the read set for POLLIN|POLLOUT
    // (5); a read set asks about reading only.
    const origPoll = env.wasm_poll_socket;
    env.wasm_poll_socket = (fd, events, timeout) => origPoll(fd, events === 5 ? 1 : events, timeout);
  }
}

async function newRuntime(lab = true) {
  let inst = null;
  const id = await loadPHPRuntime(loader, {
    websocket: {
      subprotocol: 'binary',
      url: (sock, addr, port) => {
        pendingSock = sock;
        return `ws://${addr}:${port}/`;
      },
      decorator: () => TCPPeer,
    },
    instantiateWasm(info, done) {
      patchImports(info.env, () => inst.exports);
      WebAssembly.instantiate(wasmModule, info).then((i) => {
        inst = i;
        memory = info.env.memory || i.exports.memory;
        done(i, wasmModule);
      }, (e) => fail(`php driver: instantiating PHP: ${e.message}`));
      return {};
    },
  });
  const p = new PHP(id);
  p.mkdir('/connlab');
  p.writeFile('/connlab/connlab.php', fs.readFileSync(prepend));
  if (!lab) return p;
  p.writeFile('/connlab/script.php', fs.readFileSync(php.script));
  p.writeFile('/connlab/run.php', "<?php\nrequire '/connlab/connlab.php';\nrequire '/connlab/script.php';\n");
  if (cfg.ca) p.writeFile('/connlab/ca.pem', Buffer.from(cfg.ca, 'base64'));
  return p;
}

// warmUp runs full HTTPS calls in a throwaway runtime against a private TLS
// server of this process, with no delay, before the worker says it is
// ready: V8 compiles PHP's WebAssembly lazily and optimises it as it runs,
// so a fresh process's first calls are many times slower than a warm
// worker's (a first call took 1.2 s). The compiled code belongs to the
// module, which every runtime of this process shares; no connection,
// session or DNS answer carries over. The same calls measure a full TLS
// handshake here (curl's appconnect less connect on a path with no delay):
// the CPU a handshake costs this client (and the private server).
async function warmUp() {
  const tls = await import('node:tls');
  const pem = Buffer.from(s.Cert === 'ecdsa-p256' ? cfg.warm.ECDSAPEM : cfg.warm.RSAPEM, 'base64').toString();
  const v = s.TLS === '1.2' ? 'TLSv1.2' : 'TLSv1.3';
  const body = 'x'.repeat(Math.max(0, Math.min(s.ResponseBytes || 200, 100000) - 100));
  const srv = tls.createServer({ key: pem, cert: pem, minVersion: v, maxVersion: v, ecdhCurve: 'P-256', sessionTimeout: 0, ticketKeys: undefined }, (c) => {
    let buf = '';
    c.on('data', (d) => {
      buf += d;
      while (buf.includes('\r\n\r\n')) {
        buf = buf.slice(buf.indexOf('\r\n\r\n') + 4);
        c.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      }
    });
    c.on('error', () => {});
  });
  srv.on('tlsClientError', () => {});
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  const port = srv.address().port;
  const w = await newRuntime(false);
  w.writeFile('/connlab/ca.pem', Buffer.from(cfg.warm.CAPEM, 'base64'));
  w.writeFile('/connlab/warm.php', `<?php
for ($i = 0; $i < 12; $i++) {
    $ch = curl_init('https://${apiHost}:${port}/');
    curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => '/connlab/ca.pem',
        CURLOPT_RESOLVE => ['${apiHost}:${port}:127.0.0.1'], CURLOPT_SSL_SESSIONID_CACHE => false]);
    curl_exec($ch);
    $hs = curl_getinfo($ch, CURLINFO_APPCONNECT_TIME_T) - curl_getinfo($ch, CURLINFO_CONNECT_TIME_T);
    curl_exec($ch);
    echo curl_errno($ch) ? 'error: ' . curl_error($ch) : $hs, "\n";
    curl_close($ch);
}`);
  let hs = [];
  for (let round = 0; round < 2; round++) {
    const r = await w.run({ scriptPath: '/connlab/warm.php' });
    const ls = r.text.trim().split('\n');
    if (ls.some((l) => l.startsWith('error'))) fail(`php driver: warm-up: ${ls.find((l) => l.startsWith('error'))}`);
    hs = ls.map(Number);
  }
  w.exit?.();
  srv.close();
  hs.sort((a, b) => a - b);
  return hs[hs.length >> 1] * 1000; // ns
}

let handshakeCPU = 0;
if (cfg.dns) startDNSThread(); // 0.2 s, before any lookup is timed
if (!NATIVE && cfg.warm && s.TLS !== 'none') {
  quiet = true;
  handshakeCPU = await warmUp();
  quiet = false;
  nextConn = 0;
}
// startNative starts `php -S` on a free loopback port with the script
// (after the prepend) as its router, and returns a runtime whose run()
// sends one request.
async function startNative() {
  const os = await import('node:os');
  const http = await import('node:http');
  const { spawn, execFileSync } = await import('node:child_process');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'connlab-php-'));
  fs.copyFileSync(prepend, path.join(dir, 'connlab.php'));
  fs.copyFileSync(php.script, path.join(dir, 'script.php'));
  fs.writeFileSync(path.join(dir, 'run.php'), "<?php\nrequire __DIR__ . '/connlab.php';\nrequire __DIR__ . '/script.php';\n");
  if (cfg.ca) fs.writeFileSync(path.join(dir, 'ca.pem'), Buffer.from(cfg.ca, 'base64'));
  const v = JSON.parse(execFileSync(php.binary, ['-r', 'echo json_encode(["php" => PHP_VERSION, "curl" => curl_version()["version"], "ssl" => curl_version()["ssl_version"]]);']).toString());
  const port = await new Promise((ok, bad) => {
    const l = net.createServer().listen(0, '127.0.0.1', () => {
      const p = l.address().port;
      l.close(() => ok(p));
    }).on('error', bad);
  });
  const env = { ...process.env };
  delete env.PHP_CLI_SERVER_WORKERS; // one process: this worker
  const child = spawn(php.binary, ['-S', `127.0.0.1:${port}`, path.join(dir, 'run.php')], { env, stdio: 'ignore' });
  const cleanup = () => {
    child.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', cleanup);
  for (let i = 0; ; i++) {
    const ok = await new Promise((res) => net.connect(port, '127.0.0.1').on('connect', function () { this.destroy(); res(true); }).on('error', () => res(false)));
    if (ok) break;
    if (i > 100 || child.exitCode !== null) fail(`php driver: ${php.binary} -S 127.0.0.1:${port} did not start`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    versions: { ...v, runtime: `native ${php.binary}, php -S (one process)` },
    child: { pid: child.pid, dir },
    caPath: path.join(dir, 'ca.pem'),
    exit: cleanup,
    run: ({ env }) => new Promise((ok, bad) => {
      const q = new URLSearchParams(env).toString();
      http.get({ host: '127.0.0.1', port, path: '/?' + q, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => ok({ text }));
      }).on('error', bad);
    }),
  };
}

let runtime, versions;
if (NATIVE) {
  runtime = await startNative();
  versions = runtime.versions;
} else {
  runtime = await newRuntime();
  const r = await runtime.run({ code: '<?php $v = curl_version(); echo json_encode(["php" => PHP_VERSION, "curl" => $v["version"], "ssl" => $v["ssl_version"]]);' });
  versions = { ...JSON.parse(r.text), runtime: `WebAssembly (${jspi ? 'JSPI' : 'Asyncify'}), Node ${process.versions.node}`, select_fix: FIX_SELECT, fast_yield: FAST_YIELD };
}

// serve runs one web request; it returns whether a call failed.
async function serve(j) {
  const calls = s.CallsPerRequest ?? 1;
  const sets = s.ShareSets && s.ShareSets.length ? s.ShareSets : [['dns', 'connect', 'ssl_session']];
  const set = sets[(j.req - 1) % sets.length];
  const env = {
    CONNLAB_URL: url,
    CONNLAB_CALLS: String(calls),
    CONNLAB_CA: cfg.ca ? runtime.caPath || '/connlab/ca.pem' : '',
    CONNLAB_SHARE_SET: JSON.stringify(set),
  };
  if (NATIVE) env.CONNLAB_RESOLVE = `${apiHost}:${upPort}:${upHost}`;
  if (curlTimers.dns_cache_timeout) env.CONNLAB_DNS_CACHE_TIMEOUT = String(curlTimers.dns_cache_timeout);
  if (curlTimers.maxage_conn) env.CONNLAB_MAXAGE_CONN = String(curlTimers.maxage_conn);
  if (s.AppTime) await new Promise((ok) => setTimeout(ok, s.AppTime / 1e6));
  closeReason = 'end-of-request';
  const started = nowNs();
  let r;
  try {
    r = await runtime.run({ scriptPath: '/connlab/run.php', $_SERVER: env, env });
  } catch (e) {
    r = { text: JSON.stringify({ error: `PHP: ${e.message}` }) + '\n' };
  }
  let failed = false;
  let n = 0;
  for (const line of r.text.split('\n')) {
    if (!line.trim()) continue;
    let m;
    try {
      m = JSON.parse(line);
    } catch {
      m = { error: `PHP printed: ${line.slice(0, 300)}` };
    }
    if (m.check !== undefined) {
      out({ php: { req: j.req, ...m } });
      continue;
    }
    if (m.call === undefined) {
      // An exception the script did not catch: the request failed, as one
      // call that never started.
      n++;
      const at = since(nowNs());
      emit({ k: KIND.call, at, r: j.req, c: n, w: worker, s: since(started), er: m.error });
      failed = true;
      continue;
    }
    n = m.call;
    const end = NATIVE ? BigInt(m.end_wall_us) * 1000n : hrToWallNs(m.end_ns);
    const total = m.total_us * 1000;
    const ev = { k: KIND.call, at: since(end), r: j.req, c: m.call, w: worker, s: since(end) - total, t: total, st: m.starttransfer_us * 1000 };
    if (m.local_port) ev.n = m.local_port;
    if (NATIVE) ev.lp = m.local_port; // the kernel's port: the connection's id too
    else if (portOf.has(m.local_port)) ev.lp = portOf.get(m.local_port);
    if (m.num_connects > 0) {
      ev.nc = true;
      ev.nl = m.namelookup_us * 1000;
      ev.co = m.connect_us * 1000;
      ev.ac = m.appconnect_us * 1000;
    } else {
      ev.ru = true;
    }
    if (m.errno) {
      ev.er = `curl error ${m.errno}: ${m.error}`;
      failed = true;
    }
    emit(ev);
  }
  return failed;
}

// exit closes what the process keeps, as the kernel would at its exit.
function closeAll() {
  closeReason = 'worker-exit';
  runtime.exit?.();
  for (const p of [...open]) p.close();
}

// settle waits until this process has stopped using the CPU: V8 keeps
// optimising the runtime's WebAssembly in background threads after the
// warm-up, and four workers doing so at once made the first calls of a
// run 3x slower. Ready means idle (under 5% of a CPU for 200 ms), or 30 s.
async function settle() {
  const t0 = performance.now();
  for (;;) {
    const a = process.cpuUsage();
    const w0 = performance.now();
    await new Promise((ok) => setTimeout(ok, 200));
    const d = process.cpuUsage(a);
    const busy = (d.user + d.system) / 1000 / (performance.now() - w0);
    if (busy < 0.05 || performance.now() - t0 > 30000) return;
  }
}
if (cfg.warm && !NATIVE) await settle();
out({ ready: true, versions, handshake_cpu: handshakeCPU, curl_timers: curlTimers, ...(runtime.child ? { child: runtime.child } : {}) });
const running = [];
let linger = false;
for (;;) {
  const { value, done } = await it.next();
  if (done) break;
  let m;
  try {
    m = JSON.parse(value);
  } catch (e) {
    fail(`php driver: bad line: ${e.message}`);
  }
  const j = m.job;
  if (!j) continue;
  if (base === null && j.t0) base = BigInt(j.t0);
  if (j.exit) {
    linger = !!j.linger;
    break;
  }
  // One request at a time, as a PHP worker serves them (threads = 1).
  await Promise.all(running.splice(0));
  const p = (async () => {
    if (j.at) await sleepUntil(BigInt(j.at));
    const cpu0 = process.cpuUsage();
    const failed = await serve(j);
    const cpu = process.cpuUsage(cpu0);
    // cpu_us: this process's CPU time for the request (all threads).
    out({ done: j.req, fail: failed, end: Number(nowNs()), cpu_us: cpu.user + cpu.system });
  })();
  running.push(p);
  await p;
}
await Promise.all(running);
closeAll();
if (linger) {
  for (;;) {
    const { done } = await it.next();
    if (done) break;
  }
}
process.exit(0);
