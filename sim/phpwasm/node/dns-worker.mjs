// A thread that makes one DNS query at a time for the driver's main thread,
// which waits for the answer (Atomics.wait): libcurl's resolver in PHP's
// WebAssembly build is synchronous, so the lookup must block as it does on
// Linux. A real A query in a UDP packet to the harness's DNS server.
import { parentPort, workerData } from 'node:worker_threads';
import dgram from 'node:dgram';

const state = new Int32Array(workerData.shared, 0, 2); // [flag, result length]
const out = new Uint8Array(workerData.shared, 8);

function query(name, id) {
  const labels = name.replace(/\.$/, '').split('.');
  const parts = [Buffer.from([id >> 8, id & 255, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0])];
  for (const l of labels) parts.push(Buffer.from([l.length]), Buffer.from(l, 'ascii'));
  parts.push(Buffer.from([0, 0, 1, 0, 1])); // root, type A, class IN
  return Buffer.concat(parts);
}

// answer returns the first A record of a response, or an error text.
function answer(msg, id) {
  if (msg.length < 12 || msg.readUInt16BE(0) !== id) return null;
  const rcode = msg[3] & 15;
  if (rcode !== 0) return { error: `rcode ${rcode}` };
  const qd = msg.readUInt16BE(4), an = msg.readUInt16BE(6);
  let p = 12;
  const skipName = () => {
    while (p < msg.length) {
      const n = msg[p];
      if (n === 0) { p++; return; }
      if ((n & 0xc0) === 0xc0) { p += 2; return; }
      p += n + 1;
    }
  };
  for (let i = 0; i < qd; i++) { skipName(); p += 4; }
  for (let i = 0; i < an; i++) {
    skipName();
    const type = msg.readUInt16BE(p), len = msg.readUInt16BE(p + 8);
    p += 10;
    if (type === 1 && len === 4) return { addr: [...msg.subarray(p, p + 4)].join('.') };
    p += len;
  }
  return { error: 'no address' };
}

function reply(obj) {
  const b = Buffer.from(JSON.stringify(obj));
  out.set(b.subarray(0, out.length));
  Atomics.store(state, 1, Math.min(b.length, out.length));
  Atomics.store(state, 0, 1);
  Atomics.notify(state, 0);
}

// Warm up: a packet to itself, so the first real lookup pays no start-up.
{
  const w = dgram.createSocket('udp4');
  w.on('message', () => {
    w.close();
    reply({ ready: true });
  });
  w.bind(0, '127.0.0.1', () => w.send(Buffer.from('x'), w.address().port, '127.0.0.1'));
}

let nextID = 1;
parentPort.on('message', ({ name, server }) => {
  const [host, port] = [server.slice(0, server.lastIndexOf(':')), Number(server.slice(server.lastIndexOf(':') + 1))];
  const id = nextID++ & 0xffff;
  const sock = dgram.createSocket('udp4');
  const timer = setTimeout(() => { sock.close(); reply({ error: 'timeout' }); }, 10000);
  sock.on('message', (msg) => {
    const a = answer(msg, id);
    if (!a) return; // another query's answer
    clearTimeout(timer);
    sock.close();
    reply(a);
  });
  sock.on('error', (e) => { clearTimeout(timer); sock.close(); reply({ error: e.message }); });
  sock.send(query(name, id), port, host);
});
