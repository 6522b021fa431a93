// client.mjs: Node's default HTTP clients, run as an application runs them
// and instrumented, for connlab's harness (package realclients starts it).
// Node's standard library only.
//
//   NODE_EXTRA_CA_CERTS=ca.pem node client.mjs '{"url":"https://127.0.0.1:PORT/","mode":"agent","concurrency":1,"calls":20}'
//
// mode: "agent" (https.get with the global agent: keep-alive since Node
// 19), "nokeepalive" (one new https.Agent({keepAlive: false}) for the run),
// "fetch" (the global fetch, undici built into Node). concurrency lanes
// each make calls calls, one after the other. The CA comes from
// NODE_EXTRA_CA_CERTS, as an application trusting a private CA gets it:
// Node 20's fetch takes no CA of its own without an npm package.
//
// Output, one JSON object a line: first {"node": process.version, "undici":
// its version}, then one line per call as it ends, then {"done": true,
// "sockets": distinct sockets the calls ran on, "connects": sockets the
// library connected}. A call line: call (from 1, in the order calls
// start), lane and round (from 1), start_ms, connect_ms and tls_ms (new
// sockets: when TCP and TLS were up), first_byte_ms (the response's
// headers), end_ms (body read), all from the run's start; reused (the
// library's own word: req.reusedSocket for http.Agent; for fetch, the
// socket undici sent the request on had carried one before), sock (the
// socket object's number, from 1 in the order first seen), port (its local
// port), server_conn (the upstream's X-Connlab-Conn header, "conn/request
// on it": the server's side of the same story), error.
import dc from 'node:diagnostics_channel';
import https from 'node:https';
import http from 'node:http';

// The config is the last argument (run as a file, or with -e as the harness
// runs it).
const cfg = JSON.parse(process.argv.at(-1));
const t0 = performance.now();
const now = () => Math.round((performance.now() - t0) * 1000) / 1000;
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const socks = new WeakMap(); // socket → {id, uses}
let nsocks = 0;
let connects = 0;
const sockOf = (s) => {
  let v = socks.get(s);
  if (!v) {
    v = { id: ++nsocks, uses: 0 };
    socks.set(s, v);
  }
  return v;
};

const url = new URL(cfg.url);
const mod = url.protocol === 'https:' ? https : http;

function agentCall(agent, r) {
  return new Promise((resolve) => {
    const opts = agent ? { agent } : {};
    const req = mod.get(url, opts, (res) => {
      r.first_byte_ms = now();
      r.server_conn = res.headers['x-connlab-conn'];
      r.port = req.socket?.localPort;
      res.on('data', () => {});
      res.on('end', () => { r.end_ms = now(); resolve(r); });
      res.on('error', (e) => { r.error = String(e); r.end_ms = now(); resolve(r); });
    });
    req.on('socket', (s) => {
      const v = sockOf(s);
      v.uses++;
      r.sock = v.id;
      r.reused = req.reusedSocket === true;
      if (!r.reused) {
        connects++;
        s.once('connect', () => { r.connect_ms = now(); });
        s.once('secureConnect', () => { r.tls_ms = now(); });
      }
    });
    req.on('error', (e) => { r.error = String(e); r.end_ms = now(); resolve(r); });
  });
}

// fetch: undici publishes its requests on diagnostics channels; the one
// that carries the socket a request is sent on is undici:client:sendHeaders.
// A header of ours says which call the request is.
const fetchCalls = new Map(); // call → r
if (cfg.mode === 'fetch') {
  dc.subscribe('undici:client:connected', () => { connects++; });
  dc.subscribe('undici:client:sendHeaders', ({ request, socket }) => {
    const r = fetchCalls.get(callHeader(request.headers));
    if (!r) return;
    const v = sockOf(socket);
    r.reused = v.uses > 0;
    v.uses++;
    r.sock = v.id;
    r.port = socket.localPort;
  });
}
function callHeader(h) {
  if (Array.isArray(h)) {
    for (let i = 0; i + 1 < h.length; i += 2) {
      if (String(h[i]).toLowerCase() === 'x-connlab-call') return Number(h[i + 1]);
    }
  } else if (typeof h === 'string') {
    const m = /^x-connlab-call:\s*(\d+)/im.exec(h);
    if (m) return Number(m[1]);
  }
  return 0;
}
async function fetchCall(r) {
  fetchCalls.set(r.call, r);
  try {
    const res = await fetch(url, { headers: { 'x-connlab-call': String(r.call) } });
    r.first_byte_ms = now();
    r.server_conn = res.headers.get('x-connlab-conn');
    await res.arrayBuffer();
  } catch (e) {
    r.error = String(e.cause ?? e);
  }
  r.end_ms = now();
  fetchCalls.delete(r.call);
  return r;
}

let agent;
if (cfg.mode === 'nokeepalive') agent = new mod.Agent({ keepAlive: false });
else if (cfg.mode !== 'agent' && cfg.mode !== 'fetch') {
  process.stderr.write(`mode ${JSON.stringify(cfg.mode)}: not agent, nokeepalive or fetch\n`);
  process.exit(2);
}

out({ node: process.version, undici: process.versions.undici });
let seq = 0;
async function lane(l) {
  for (let k = 1; k <= cfg.calls; k++) {
    const r = { call: ++seq, lane: l, round: k, start_ms: now() };
    out(await (cfg.mode === 'fetch' ? fetchCall(r) : agentCall(agent, r)));
  }
}
await Promise.all(Array.from({ length: cfg.concurrency }, (_, i) => lane(i + 1)));
out({ done: true, sockets: nsocks, connects });
// Kept-alive sockets would keep the process a few seconds more; stdout is
// a pipe, written synchronously on Linux, so nothing is lost.
process.exit(0);
