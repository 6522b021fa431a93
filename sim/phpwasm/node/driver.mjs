// connlab's PHP 8.5 worker process: one Node process holds one PHP runtime
// (PHP 8.5 compiled to WebAssembly, @php-wasm), so the process's lifetime is
// the runtime's, as a PHP-FPM child's. It speaks the harness's worker line
// protocol on stdin/stdout (JSON lines): a {"config": ...} line, then
// {"job": ...} lines; it answers {"ready": true, "info": {...}}, {"ev": ...}
// events, {"check": {...}} (what a probing script printed), {"done": req,
// "fail": bool, "end": unixNanos, "cpu_us": n} and {"error": "..."}.
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
import v8 from 'node:v8';
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

// Event kinds (sim.Kind).
const KIND = { call: 0, open: 1, close: 3 };

const out = (m) => process.stdout.write(JSON.stringify(m) + '\n');
// CONNLAB_DRIVER_DEBUG=FILE appends what the driver does to FILE.
const debug = (msg) => process.env.CONNLAB_DRIVER_DEBUG && fs.appendFileSync(process.env.CONNLAB_DRIVER_DEBUG, `${(performance.timeOrigin + performance.now()).toFixed(1)} ${process.pid} ${msg}\n`);
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
// scenario, in the whole seconds curl takes (at least 1 where the
// scenario has a timer). The ready line says what curl got, so the model
// can be given the same. 0 means what it means in the model: no DNS cache
// (curl's 0 too), no idle limit (curl is given the longest it takes).
const wholeSeconds = (ns) => (!ns ? 0 : Math.max(1, Math.round(ns / 1e9)));
const curlTimers = { dns_cache_timeout: wholeSeconds(s.DNSCacheTimeout), maxage_conn: wholeSeconds(s.MaxIdleAge) };
const holdMs = (s.DNS || 0) / 1e6; // the DNS server answers at once; the wait is here (as the Go worker's resolver.hold)
// php.connect_delay (ns): each connection is reported connected this long
// after connect() was called (the harness passes the scenario's RTT; the
// upstream then delays only the bytes, not the TCP handshake).
const connectDelayNs = BigInt(Math.max(0, Math.round(php.connect_delay || 0)));

// --- run clock and events --------------------------------------------
let base = null; // the run's start, Unix ns (BigInt)
const since = (wallNs) => (base === null ? 0 : Number(wallNs - base));
let quiet = false; // warm-up: its connections are not the run's
const emit = (ev) => quiet || out({ ev });

// --- sockets: the fake WebSocket that is a TCP connection ---------------
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
    // TCP_NODELAY, as libcurl asks (CURLOPT_TCP_NODELAY is on by default):
    // it asks before connect(), when the runtime has no socket here yet to
    // pass it on to (setSocketOpt). With Nagle on, a TLS 1.3 request waited
    // for the ACK of the client's Finished, which the server delays (40 ms
    // on Linux) having nothing to send.
    this.tcp = net.connect({ host: m[1], port: Number(m[2]), allowHalfOpen: true, noDelay: true });
    open.add(this);
    this.tcp.on('connect', async () => {
      // The TCP handshake's round trip, as the harness's own dialer waits
      // it: curl sees the socket writable (connected) only then.
      if (connectDelayNs > 0 && !quiet) await sleepUntil(this.started + connectDelayNs);
      if (this.closed) return;
      this.localPort = this.tcp.localPort;
      portOf.set(this.id, this.localPort);
      this.readyState = 1;
      emit({ k: KIND.open, at: since(this.started), n: this.id, lp: this.localPort });
      this.emit('open');
    });
    this.tcp.on('data', (b) => this.emit('message', b, true));
    this.tcp.on('end', () => {
      debug(`conn ${this.id} lp ${this.localPort}: the server closed (FIN)`);
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
    const b = Buffer.from(data);
    this.lastSend = performance.now();
    // An alert record is how libcurl ends a connection: close_notify,
    // then close() at once. In WebAssembly the runtime frees the
    // connection's TLS objects in between, for some ms, with the event
    // loop (and so the FIN) held up: the server read the alert first,
    // closed first and held the TIME_WAIT that the client holds (one
    // connection in ten with TLS 1.2, about half with TLS 1.3; native
    // PHP's client holds them all). The alert is held back and leaves
    // with the FIN (close), as a native client's would. TLS 1.2 sends it
    // as an alert record (content type 21); TLS 1.3 encrypts its type, and
    // it is the 24-byte record (a 5-byte header, an alert's 2 bytes, its
    // inner type, a 16-byte tag) that no HTTP message makes. That one
    // leaves at the next turn of the event loop if no close comes first.
    if (b.length >= 5 && b[1] === 3 && b.length === 5 + b.readUInt16BE(3) && (b[0] === 21 || (b[0] === 23 && b.length === 24))) {
      this.flushAlert();
      this.heldAlert = b;
      if (b[0] === 23) setImmediate(() => this.flushAlert(b));
      return;
    }
    this.flushAlert();
    this.tcp.write(b);
  }
  // flushAlert sends the held alert record (only if it is still held,
  // given one).
  flushAlert(only) {
    if (!this.heldAlert || (only && this.heldAlert !== only) || this.closed) return;
    this.tcp.write(this.heldAlert);
    this.heldAlert = null;
  }
  setSocketOpt(level, name, valuePtr) {
    const memory = this.memory();
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
      debug(`close conn ${this.id} lp ${this.localPort} by ${by}, last send ${(performance.now() - (this.lastSend || 0)).toFixed(2)} ms ago`);
      // The alert and the FIN leave together, once the event loop runs
      // (Node half-closes a socket there, not in this call).
      const tcp = this.tcp;
      const alert = this.heldAlert;
      setImmediate(() => {
        if (alert) tcp.write(alert);
        tcp.end();
        tcp.destroySoon?.();
      });
    }
  }
  memory() {
    return null; // a runtime's own subclass says (newRuntime)
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

// patchImports wraps a runtime's imports; getExports and getMemory give
// that runtime's (each runtime has its own memory).
function patchImports(env, getExports, getMemory) {
  const cstr = (p) => {
    const b = new Uint8Array(getMemory().buffer);
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
        new Uint8Array(getMemory().buffer).set(Buffer.from(a.addr + '\0'), ipPtr);
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

async function newRuntime() {
  let inst = null;
  let memory = null;
  const id = await loadPHPRuntime(loader, {
    websocket: {
      subprotocol: 'binary',
      url: (sock, addr, port) => {
        pendingSock = sock;
        return `ws://${addr}:${port}/`;
      },
      // This runtime's sockets read socket options from its memory.
      decorator: () => class extends TCPPeer {
        memory() {
          return memory;
        }
      },
    },
    instantiateWasm(info, done) {
      patchImports(info.env, () => inst.exports, () => memory);
      WebAssembly.instantiate(wasmModule, info).then((i) => {
        inst = i;
        memory = info.env.memory || i.exports.memory;
        done(i, wasmModule);
      }, (e) => fail(`php driver: instantiating PHP: ${e.message}`));
      return {};
    },
  });
  const p = new PHP(id);
  // php-wasm runs OPcache from a file cache only, with PHP's default
  // file_update_protection of 2 s: a script written less than 2 s ago is
  // compiled on every request and not cached, and the first request after
  // that optimises and stores it (much CPU). PHP-FPM's
  // workers find their scripts long since cached; so does this one: no
  // protection, and the lab's scripts are compiled before ready.
  const ini = '/internal/shared/php.ini';
  if (p.fileExists(ini)) p.writeFile(ini, p.readFileAsText(ini) + '\nopcache.file_update_protection = 0\n');
  p.mkdir('/connlab');
  p.writeFile('/connlab/connlab.php', fs.readFileSync(prepend));
  p.writeFile('/connlab/script.php', fs.readFileSync(php.script));
  p.writeFile('/connlab/run.php', "<?php\nrequire '/connlab/connlab.php';\nrequire '/connlab/script.php';\n");
  if (cfg.ca) p.writeFile('/connlab/ca.pem', Buffer.from(cfg.ca, 'base64'));
  return p;
}

// warmTarget and warmCalls: full calls with no delay, in requests of the
// worker's own runtime, before the worker says it is ready. V8 compiles
// PHP's WebAssembly lazily and optimises it as it runs, and the runtime's
// OpenSSL and curl set themselves up on first use, so a fresh process's
// first calls are many times slower than a warm worker's:
// a PHP-FPM worker has served other requests before. The
// calls use plain curl handles, which die with their request, and the
// name's address (CURLOPT_RESOLVE), except the first four: those look the
// name up with no DNS cache, because a first lookup on a cold path
// (libcurl's resolver, our getaddrinfo, the DNS thread) took 1.2-1.3 ms
// more than a warm one. That holds without a DNS server too (dns = 0, the
// name is 127.0.0.1 at once): the run's first call then paid the cold path
// as a namelookup the model does not have. No connection, TLS session
// or DNS answer is left for the run. They go to php.warm_upstream (the harness's
// server for this scenario, without delay or work) or else to a private
// Node TLS server of this process, and they measure what this client costs
// on top of the network: opening a TCP connection (curl's connect less
// namelookup), a full TLS handshake (appconnect less connect), and on a
// kept connection the work before the answer's first byte (starttransfer)
// and after it (total less starttransfer).
async function warmTarget() {
  const tls = s.TLS !== 'none';
  if (php.warm_upstream) {
    const h = php.warm_upstream.slice(0, php.warm_upstream.lastIndexOf(':'));
    if (!loopback(h)) fail(`php driver: warm_upstream ${php.warm_upstream} is not a loopback address`);
    return { port: Number(php.warm_upstream.slice(php.warm_upstream.lastIndexOf(':') + 1)), ca: cfg.ca };
  }
  const mod = await import(tls ? 'node:tls' : 'node:net');
  const pem = Buffer.from(s.Cert === 'ecdsa-p256' ? cfg.warm.ECDSAPEM : cfg.warm.RSAPEM, 'base64').toString();
  const v = s.TLS === '1.2' ? 'TLSv1.2' : 'TLSv1.3';
  const body = 'x'.repeat(Math.max(0, Math.min(s.ResponseBytes || 200, 100000) - 100));
  const handler = (c) => {
    let buf = '';
    c.on('data', (d) => {
      buf += d;
      while (buf.includes('\r\n\r\n')) {
        buf = buf.slice(buf.indexOf('\r\n\r\n') + 4);
        c.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      }
    });
    c.on('error', () => {});
  };
  const srv = tls ? mod.createServer({ key: pem, cert: pem, minVersion: v, maxVersion: v, ecdhCurve: 'P-256', sessionTimeout: 0 }, handler) : mod.createServer(handler);
  srv.on('tlsClientError', () => {});
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  srv.unref();
  return { port: srv.address().port, ca: cfg.warm.CAPEM };
}

// dropTarget starts a private server of this process that closes each
// connection once it has answered (TLS: close_notify, then the FIN), as a
// server's keep-alive timer closes an idle one: the next call on the
// handle finds its connection closed and drops it.
async function dropTarget() {
  const tls = s.TLS !== 'none';
  const mod = await import(tls ? 'node:tls' : 'node:net');
  const pem = Buffer.from(s.Cert === 'ecdsa-p256' ? cfg.warm.ECDSAPEM : cfg.warm.RSAPEM, 'base64').toString();
  const v = s.TLS === '1.2' ? 'TLSv1.2' : 'TLSv1.3';
  const handler = (c) => {
    let buf = '';
    c.on('data', (d) => {
      buf += d;
      if (buf.includes('\r\n\r\n')) c.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
    c.on('error', () => {});
  };
  const srv = tls ? mod.createServer({ key: pem, cert: pem, minVersion: v, maxVersion: v, sessionTimeout: 0 }, handler) : mod.createServer(handler);
  srv.on('tlsClientError', () => {});
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok));
  srv.unref();
  return { port: srv.address().port, ca: cfg.warm.CAPEM };
}

// warmCalls runs the calls `rounds` times in runtime w and returns the
// last round's medians (ns): connect, handshake, send and read (see above).
let target = null;
let dropper = null;
async function warmCalls(w, rounds) {
  target ??= await warmTarget();
  // A kept connection the server has closed is dropped by the next call
  // before its name lookup (libcurl looks in its pool first): what that
  // costs PHP here is the model's drop_cpu.
  dropper ??= await dropTarget();
  const tls = s.TLS !== 'none';
  // libcurl resumes TLS 1.3 sessions with the upstream (not TLS 1.2's: it
  // asks for no TLS 1.2 tickets, and Go's server keeps no session IDs; the
  // harness turns tls_resume off there), so what a resumed handshake
  // costs PHP here is measured too: the model's resume_cpu.
  const resume = s.TLS === '1.3' && s.TLSResume && !!php.warm_upstream;
  if (tls) w.writeFile('/connlab/warm-ca.pem', Buffer.from(target.ca, 'base64'));
  if (tls) w.writeFile('/connlab/drop-ca.pem', Buffer.from(dropper.ca, 'base64'));
  w.writeFile('/connlab/warm.php', `<?php
for ($i = 0; $i < 16; $i++) {
    $ch = curl_init('${tls ? 'https' : 'http'}://${apiHost}:${target.port}/');
    curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => '/connlab/warm-ca.pem',
        CURLOPT_SSL_SESSIONID_CACHE => false]);
    if ($i >= 4) curl_setopt($ch, CURLOPT_RESOLVE, ['${apiHost}:${target.port}:127.0.0.1']);
    else curl_setopt($ch, CURLOPT_DNS_CACHE_TIMEOUT, 0);
    curl_exec($ch);
    $co = curl_getinfo($ch, CURLINFO_CONNECT_TIME_T) - curl_getinfo($ch, CURLINFO_NAMELOOKUP_TIME_T);
    $hs = ${tls ? 'curl_getinfo($ch, CURLINFO_APPCONNECT_TIME_T) - curl_getinfo($ch, CURLINFO_CONNECT_TIME_T)' : '0'}; // no TLS: appconnect is 0
    curl_exec($ch);
    $st = curl_getinfo($ch, CURLINFO_STARTTRANSFER_TIME_T);
    $read = curl_getinfo($ch, CURLINFO_TOTAL_TIME_T) - $st;
    echo curl_errno($ch) ? 'error: ' . curl_error($ch) : "$co $hs $st $read", "\n";
    unset($ch); // closes its connection (curl_close() is deprecated in 8.5)
}${resume ? `
// Resumed handshakes: one handle, a new connection for each call
// (FORBID_REUSE), each resuming the session of the one before (the
// handle's session cache holds the ticket read with the answer).
$ch = curl_init('https://${apiHost}:${target.port}/');
curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => '/connlab/warm-ca.pem',
    CURLOPT_FORBID_REUSE => true, CURLOPT_RESOLVE => ['${apiHost}:${target.port}:127.0.0.1']]);
$rs = [];
for ($i = 0; $i < 13; $i++) {
    if (curl_exec($ch) === false) { echo 'error: ', curl_error($ch), "\n"; break; }
    if ($i > 0) $rs[] = curl_getinfo($ch, CURLINFO_APPCONNECT_TIME_T) - curl_getinfo($ch, CURLINFO_CONNECT_TIME_T);
}
echo 'resumed ', implode(' ', $rs), "\n";
unset($ch);` : ''}
// Dropped connections: the server closes each connection after its
// answer, so a handle's second call finds the first's closed and drops
// it. libcurl drops it before the lookup or, within a second of its last
// scan of the pool, as it connects: the second call's time to connected
// less the first's (a fresh handle's) is the drop, wherever it lands.
$ds = [];
for ($i = 0; $i < 12; $i++) {
    $ch = curl_init('${tls ? 'https' : 'http'}://${apiHost}:${dropper.port}/');
    curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => '/connlab/drop-ca.pem',
        CURLOPT_SSL_SESSIONID_CACHE => false, CURLOPT_RESOLVE => ['${apiHost}:${dropper.port}:127.0.0.1']]);
    curl_exec($ch);
    $first = curl_getinfo($ch, CURLINFO_CONNECT_TIME_T);
    usleep(10000); // the server's close arrives
    curl_exec($ch);
    // A close that had not arrived yet (a busy machine) leaves a pair
    // without a drop: it is left out.
    if (!curl_errno($ch) && curl_getinfo($ch, CURLINFO_NUM_CONNECTS) === 1) $ds[] = curl_getinfo($ch, CURLINFO_CONNECT_TIME_T) - $first;
    unset($ch);
}
echo 'dropped ', implode(' ', $ds), "\n";`);
  let rows = [];
  let resumed = [];
  let dropped = [];
  const wasQuiet = quiet;
  quiet = true; // these connections are not the run's
  for (let round = 0; round < rounds; round++) {
    const r = await w.run({ scriptPath: '/connlab/warm.php' });
    const ls = r.text.trim().split('\n');
    const dl = ls.pop();
    const rl = resume ? ls.pop() : '';
    if (ls.some((l) => !/^\d+ \d+ \d+ \d+$/.test(l)) || (resume && !/^resumed( \d+){12}$/.test(rl)) || !/^dropped( -?\d+){3,12}$/.test(dl))
      fail(`php driver: warm-up: PHP printed ${JSON.stringify(r.text.replace(/<[^>]*>/g, '').trim().slice(0, 500))}`);
    rows = ls.map((l) => l.split(' ').map(Number));
    resumed = resume ? rl.split(' ').slice(1).map(Number) : [];
    dropped = dl.split(' ').slice(1).map(Number);
  }
  quiet = wasQuiet;
  // A request's own cost besides its calls: request startup, the prepend,
  // shutdown, reading its output (an empty script after the prepend).
  w.writeFile('/connlab/empty.php', "<?php\nrequire '/connlab/connlab.php';\n");
  const walls = [];
  for (let i = 0; i < 9; i++) {
    const env = requestEnv(1);
    const t0 = performance.now();
    const r = await w.run({ scriptPath: '/connlab/empty.php', $_SERVER: env, env });
    r.text.split('\n');
    walls.push(performance.now() - t0);
  }
  walls.sort((a, b) => a - b);
  const mid = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1] * 1000;
  const median = (i) => mid(rows.map((r) => r[i]));
  // How much one new connection's call varies here: the 90th percentile
  // of the calls' CPU (connect, handshake, before and after the answer's
  // first byte) less its median. A row the harness compares from one or
  // two calls allows it, as no median averages it away.
  const sums = rows.map((r) => r[0] + r[1] + r[2] + r[3]).sort((a, b) => a - b);
  return {
    connect_cpu: median(0),
    handshake_cpu: tls ? median(1) : 0,
    resume_cpu: resume ? mid(resumed) : 0,
    // A difference of two times about a millisecond each: a driver's
    // median can come out at or below 0 (the drop within the noise).
    drop_cpu: Math.max(0, mid(dropped)),
    drop_pairs: dropped.length,
    client_cpu: median(2),
    client_read_cpu: median(3),
    request_cpu: Math.round(walls[walls.length >> 1] * 1e6),
    call_spread: Math.max(0, sums[Math.floor(0.9 * (sums.length - 1))] - sums[sums.length >> 1]) * 1000,
  };
}

if (cfg.dns) startDNSThread(); // 0.2 s, before any lookup is timed
// startNative starts `php -S` on a free loopback port with the script
// (after the prepend) as its router, and returns a runtime whose run()
// sends one request.
async function startNative() {
  const os = await import('node:os');
  const http = await import('node:http');
  const { spawn, execFileSync } = await import('node:child_process');
  // Named connlab-php-PID-…, PID as /proc names it (the host's: the lab
  // process's PID namespace has no /proc of its own), as the harness names
  // its folders (sim/harness/kernel/tmpdirs.go): a run killed with SIGKILL
  // skips the exit handler below, and the next real run removes the folder.
  let pid = process.pid;
  try {
    pid = Number(fs.readlinkSync('/proc/self')) || pid;
  } catch {
    // no /proc: the process's own PID
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `connlab-php-${pid}-`));
  fs.copyFileSync(prepend, path.join(dir, 'connlab.php'));
  fs.copyFileSync(php.script, path.join(dir, 'script.php'));
  fs.writeFileSync(path.join(dir, 'run.php'), "<?php\nrequire __DIR__ . '/connlab.php';\nrequire __DIR__ . '/script.php';\n");
  if (cfg.ca) fs.writeFileSync(path.join(dir, 'ca.pem'), Buffer.from(cfg.ca, 'base64'));
  const v = JSON.parse(execFileSync(php.binary, ['-r', probe.replace('<?php ', '')]).toString());
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
    info: { ...v, runtime: `native ${php.binary}, php -S (one process)` },
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

// probe is what a runtime says about itself: versions, and whether the
// API exists.
const probe = `<?php $v = curl_version(); echo json_encode(["php" => PHP_VERSION, "curl" => $v["version"], "ssl" => $v["ssl_version"],
  "persistent_share" => function_exists("curl_share_init_persistent")]);`;
let runtime, info;
if (NATIVE) {
  runtime = await startNative();
  info = runtime.info;
} else {
  runtime = await newRuntime();
  // The lab's scripts go into OPcache now (see newRuntime), and the
  // runtime says what it is; no lab code runs.
  const compiled = runtime.run({ code: probe.replace('<?php', `<?php
foreach (['/connlab/connlab.php', '/connlab/script.php', '/connlab/run.php'] as $f) {
    if (function_exists('opcache_compile_file') && !@opcache_compile_file($f)) {
        echo json_encode(['error' => "$f: " . (error_get_last()['message'] ?? 'does not compile')]);
        exit;
    }
}`) });
  let r;
  try {
    r = await compiled;
  } catch (e) {
    // A fatal error (a script that does not compile) ends the request.
    const why = (e.response?.errors || e.message || String(e)).replaceAll('/connlab/script.php', php.script).replaceAll('/connlab/connlab.php', prepend);
    fail(`php driver: PHP cannot run the lab's script: ${why.trim().slice(0, 500)}`);
  }
  let v;
  try {
    v = JSON.parse(r.text);
  } catch {
    fail(`php driver: the runtime's probe printed ${JSON.stringify(r.text.slice(0, 300))}`);
  }
  if (v.error) fail(`php driver: ${v.error}`);
  if (cfg.warm) {
    Object.assign(v, await warmCalls(runtime, 2));
    nextConn = 0;
  }
  let pkg = '';
  try {
    pkg = JSON.parse(fs.readFileSync(require.resolve('@php-wasm/node-8-5/package.json'))).version;
  } catch {}
  info = { ...v, runtime: `WebAssembly (${jspi ? 'JSPI' : 'Asyncify'}), Node ${process.versions.node}`, package: pkg ? `@php-wasm/node-8-5 ${pkg}` : '', select_fix: FIX_SELECT, fast_yield: FAST_YIELD };
}

// serve runs one web request; it returns whether a call failed.
// requestEnv is what request req's script is told (connlab.php reads it).
function requestEnv(req) {
  const calls = s.CallsPerRequest ?? 1;
  const sets = s.ShareSets && s.ShareSets.length ? s.ShareSets : [['dns', 'connect', 'ssl_session']];
  const set = sets[(req - 1) % sets.length];
  const env = {
    CONNLAB_URL: url,
    CONNLAB_CALLS: String(calls),
    CONNLAB_CA: cfg.ca ? runtime.caPath || '/connlab/ca.pem' : '',
    CONNLAB_SHARE_SET: JSON.stringify(set),
  };
  if (NATIVE) env.CONNLAB_RESOLVE = `${apiHost}:${upPort}:${upHost}`;
  env.CONNLAB_DNS_CACHE_TIMEOUT = String(curlTimers.dns_cache_timeout);
  env.CONNLAB_MAXAGE_CONN = String(curlTimers.maxage_conn || 2147483647);
  return env;
}

async function serve(j) {
  const env = requestEnv(j.req);
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
      out({ check: { req: j.req, ...m } });
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
  if (process.env.CONNLAB_DRIVER_DEBUG) {
    try {
      const st = { '06': 'TIME_WAIT', '08': 'CLOSE_WAIT', '05': 'FIN_WAIT2', '04': 'FIN_WAIT1', '0B': 'CLOSING', '09': 'LAST_ACK' };
      for (const l of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
        const f = l.trim().split(/\s+/);
        if (f.length > 3 && st[f[3]]) debug(`tcp ${parseInt(f[1].split(':')[1], 16)} -> ${parseInt(f[2].split(':')[1], 16)} ${st[f[3]]}`);
      }
    } catch {}
  }
  closeReason = 'worker-exit';
  runtime.exit?.();
  for (const p of [...open]) p.close();
}

// settle waits until this process has stopped using the CPU: V8 keeps
// optimising the runtime's WebAssembly in background threads after the
// warm-up, and four workers doing so at once slow the first calls of a
// run down. Ready means idle (under 5% of a CPU for 200 ms), or 30 s.
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

// collect runs a full garbage collection where nothing is measured: before
// the worker says it is ready, and after a measure job, just before a run.
// V8's young generation fills as the process runs, and the call that
// allocates past its end pays a scavenge, some milliseconds of the main
// thread. Left as the warm-up left it, the young generation was often
// nearly full, and the run's first call, the one that opens the worker's
// connection, paid it; a PHP-FPM worker's own memory manager has no such
// pause. The harness's Go processes do the same (roles.settle).
v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc');
collect();
if (cfg.nice) {
  // Started at the lowest priority so that a replacement warms up behind
  // the requests in flight; ready, every thread takes the highest where
  // allowed (a nice value is a thread's). In a PID namespace whose /proc is
  // the host's, a thread's own ID is the last of its NSpid line.
  const os = await import('node:os');
  for (const t of fs.readdirSync('/proc/self/task')) {
    try {
      const ns = /^NSpid:\s+(.*)$/m.exec(fs.readFileSync(`/proc/self/task/${t}/status`, 'utf8'));
      os.setPriority(Number(ns ? ns[1].trim().split(/\s+/).pop() : t), -20);
    } catch {}
  }
}
out({ ready: true, info: { ...info, curl_timers: curlTimers, ...(runtime.child ? { child: runtime.child } : {}) } });
const running = [];
let linger = false;
let served = 0;
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
  debug(`job ${JSON.stringify(j)}`);
  if (j.measure) {
    // Measure again what warm-up measured, now (the harness asks once its
    // workers are all ready, so that none is warming up beside it).
    await Promise.all(running.splice(0));
    const r = NATIVE || !cfg.warm ? {} : await warmCalls(runtime, 1);
    if (served === 0) nextConn = 0;
    collect();
    out({ info: r });
    continue;
  }
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
    served++;
    const failed = await serve(j);
    const cpu = process.cpuUsage(cpu0);
    // cpu_us: this process's CPU time for the request (all threads).
    out({ done: j.req, fail: failed, end: Number(nowNs()), cpu_us: cpu.user + cpu.system });
    debug(`done ${j.req}`);
  })();
  running.push(p);
  await p;
}
await Promise.all(running);
closeAll();
await new Promise((ok) => setImmediate(ok)); // the closes leave (see TCPPeer.close)
if (linger) {
  for (;;) {
    const { done } = await it.next();
    if (done) break;
  }
}
process.exit(0);
