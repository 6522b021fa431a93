"""Python requests as an application runs it, instrumented (connlab).

Runs CALLS calls in all, claimed one at a time by THREADS threads, to one
URL with the real requests library, in one of three modes:

  get           requests.get() at module level: no Session of ours
  session       one requests.Session() shared by every thread
  session-pool  one Session with HTTPAdapter(pool_maxsize=K, pool_block=False)

and prints JSON lines on stdout:

  {"versions": {"python": ..., "requests": ..., "urllib3": ...}}   first
  {"kind": "call", ...}        one per call, in the shape of sim.Event's
                               AppendJSON (sim/event.go), as each call ends
  {"summary": {...}}           last: calls, connects, pool_full warnings

With --bursts the threads meet before each of their calls, so that the
calls in flight rise from none to THREADS at once and fall back, as bursts
of requests do; without it, each thread calls again as soon as its call
ends, and the calls in flight stay near THREADS until the last ones.

Only the standard library and requests (with the urllib3 it brings).

Which internals of urllib3 this relies on (read in urllib3 1.26.12,
Debian bookworm's python3-urllib3, and 2.7.0 from pip):

  * HTTPConnectionPool.ConnectionCls / HTTPSConnectionPool.ConnectionCls:
    the class every pool instantiates in _new_conn (both versions). We
    set it to subclasses of urllib3.connection.HTTP(S)Connection, before
    any pool exists, so requests.get's throwaway pools use them too.
  * HTTP(S)Connection.connect(): called by the pool, in the calling
    thread, once per TCP connection (_validate_conn / _make_request when
    the connection has no socket, 1.26 `not conn.sock`, 2.x
    `conn.is_closed`). One call of connect() is one connection opened;
    the object may be reused for a later connect() after a close, so the
    id is given per connect(), not per object.
  * HTTPConnection._new_conn(): returns the connected TCP socket (both
    versions), so its return is curl's time_connect.
  * putrequest(): every request on a connection goes through it (1.26:
    http.client's request/request_chunked; 2.x: urllib3's request), in the
    calling thread; it tells which connection served the thread's call.
  * getresponse(): returns once the response's headers are in (curl's
    time_starttransfer).
  * The warning "Connection pool is full, discarding connection" logged
    on the "urllib3.connectionpool" logger by _put_conn when the pool's
    queue is full (pool_block=False): counted by a logging handler. It is
    logged in the thread that puts the connection back, which is the
    thread whose call used it (requests reads the body, then urllib3
    releases the connection, within the call).
"""

import argparse
import json
import logging
import platform
import sys
import threading
import time

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3 import connection as u3conn
from urllib3 import connectionpool as u3pool

T0 = time.perf_counter()
_tl = threading.local()  # the running call of this thread
_lock = threading.Lock()  # guards _next_id, _connects, _pool_full, stdout
_next_id = 0
_connects = 0
_pool_full = 0
_discarded = []  # connection ids the pool discarded


def _ms():
    return (time.perf_counter() - T0) * 1000.0


def _since_call():
    return _ms() - getattr(_tl, "start", 0.0)


class _Instrumented:
    """Mixed into urllib3's connection classes: records, for the thread's
    running call, the connections it opened and the one that served it."""

    def _new_conn(self):
        sock = super()._new_conn()
        if getattr(_tl, "active", False):
            _tl.connect = _since_call()
        return sock

    def connect(self):
        global _next_id, _connects
        with _lock:
            _next_id += 1
            _connects += 1
            self._connlab_id = _next_id
        if getattr(_tl, "active", False):
            _tl.connects += 1
        super().connect()
        self._connlab_port = self.sock.getsockname()[1]
        if getattr(_tl, "active", False):
            _tl.appconnect = _since_call()
            reused = getattr(self.sock, "session_reused", None)
            if reused is not None:  # an ssl.SSLSocket: a TLS handshake
                _tl.handshake = "resumed" if reused else "full"

    def putrequest(self, *args, **kwargs):
        if getattr(_tl, "active", False):
            _tl.conn = self
        return super().putrequest(*args, **kwargs)

    def getresponse(self, *args, **kwargs):
        r = super().getresponse(*args, **kwargs)
        if getattr(_tl, "active", False):
            _tl.starttransfer = _since_call()
        return r


class _HTTPConnection(_Instrumented, u3conn.HTTPConnection):
    pass


class _HTTPSConnection(_Instrumented, u3conn.HTTPSConnection):
    pass


u3pool.HTTPConnectionPool.ConnectionCls = _HTTPConnection
u3pool.HTTPSConnectionPool.ConnectionCls = _HTTPSConnection


class _PoolFull(logging.Handler):
    def emit(self, record):
        global _pool_full
        if not str(record.msg).startswith("Connection pool is full"):
            return
        conn = getattr(_tl, "conn", None) if getattr(_tl, "active", False) else None
        with _lock:
            _pool_full += 1
            if conn is not None:
                _discarded.append(getattr(conn, "_connlab_id", 0))


_pool_log = logging.getLogger("urllib3.connectionpool")
_pool_log.addHandler(_PoolFull(logging.WARNING))


def _emit(obj):
    line = json.dumps(obj, separators=(",", ":"))
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _r(ms):
    return round(ms, 3)


def one_call(n, worker, do):
    """Runs call n and prints its event (sim.Event's AppendJSON keys)."""
    _tl.active = True
    _tl.connects = 0
    _tl.conn = None
    _tl.connect = _tl.appconnect = _tl.starttransfer = 0.0
    _tl.handshake = ""
    _tl.start = _ms()
    err = ""
    try:
        resp = do()
        if resp.status_code != 200:
            err = "HTTP %d" % resp.status_code
    except Exception as e:  # the call's failure is the event's error text
        err = "%s: %s" % (type(e).__name__, e)
    end = _ms()
    _tl.active = False
    conn = _tl.conn
    new = _tl.connects > 0
    ev = {"kind": "call", "at_ms": _r(end), "call": n, "worker": worker}
    cid = getattr(conn, "_connlab_id", 0) if conn is not None else 0
    if cid:
        ev["conn"] = cid
    ev["new_conn"] = new
    ev["reused"] = conn is not None and not new
    ev["num_connects"] = 1 if new else 0
    ev["start_ms"] = _r(_tl.start)
    ev["namelookup_ms"] = 0  # the URL is an IP address: no lookup
    ev["connect_ms"] = _r(_tl.connect) if new else 0
    ev["appconnect_ms"] = _r(_tl.appconnect) if new and _tl.handshake else 0
    ev["starttransfer_ms"] = _r(_tl.starttransfer)
    ev["total_ms"] = _r(end - _tl.start)
    if new and _tl.handshake:
        ev["handshake"] = _tl.handshake
    port = getattr(conn, "_connlab_port", 0) if conn is not None else 0
    if port:
        ev["local_port"] = port
    ev["error"] = err
    _emit(ev)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--ca", default="", help="CA file the server's certificate chains to (verify=)")
    p.add_argument("--mode", choices=["get", "session", "session-pool"], default="get")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--calls", type=int, default=1, help="calls in all")
    p.add_argument("--pool-maxsize", type=int, default=10, help="session-pool's pool_maxsize")
    p.add_argument("--bursts", action="store_true",
                   help="the threads meet before each call (CALLS must be a multiple of THREADS)")
    p.add_argument("--timeout", type=float, default=30.0, help="each call's timeout, seconds")
    a = p.parse_args()
    if a.threads < 1 or a.calls < 0 or a.pool_maxsize < 1:
        p.error("--threads and --pool-maxsize must be at least 1, --calls at least 0")
    if a.bursts and a.calls % a.threads:
        p.error("--bursts: --calls must be a multiple of --threads")

    _emit({"versions": {"python": platform.python_version(), "requests": requests.__version__,
                        "urllib3": urllib3.__version__}})

    verify = a.ca if a.ca else True
    kw = {"verify": verify, "timeout": a.timeout}
    if a.mode == "get":
        def do():
            return requests.get(a.url, **kw)
    else:
        s = requests.Session()
        if a.mode == "session-pool":
            ad = HTTPAdapter(pool_maxsize=a.pool_maxsize, pool_block=False)
            s.mount("https://", ad)
            s.mount("http://", ad)

        def do():
            return s.get(a.url, **kw)

    claimed = [0]
    claim_lock = threading.Lock()
    barrier = threading.Barrier(a.threads)

    def claim():
        with claim_lock:
            if claimed[0] >= a.calls:
                return 0
            claimed[0] += 1
            return claimed[0]

    def worker(w):
        if a.bursts:
            for _ in range(a.calls // a.threads):
                barrier.wait()  # the burst starts when every thread is back
                one_call(claim(), w, do)
            return
        barrier.wait()  # every thread starts at once: the concurrency is real
        while True:
            n = claim()
            if n == 0:
                return
            one_call(n, w, do)

    threads = [threading.Thread(target=worker, args=(w + 1,), daemon=True) for w in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _emit({"summary": {"calls": claimed[0], "connects": _connects, "pool_full": _pool_full,
                       "discarded": _discarded}})


if __name__ == "__main__":
    main()
