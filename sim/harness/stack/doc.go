// Package stack runs the source article's real stack on 127.0.0.1: a load
// generator → nginx → a Python app (Flask, under gunicorn's threaded workers
// or Flask's own development server) → redis-server, with Debian's
// programs, and measures it per hop and per side: connections opened,
// sockets by TCP state (TIME_WAIT on the connecting and on the accepting
// end), CPU time per tier, throughput and latency.
//
// RunIsolated runs one Spec in network, PID and mount namespaces of its own,
// so that the sockets it counts are its own and nothing outlives it;
// stackrun runs many and writes a Record (versions, machine, runs), as in
// labs/nginx-keepalive.stack-runs.json. The app (app.py) and nginx's
// configuration (nginx.conf.tmpl) are embedded.
//
// Linux only (namespaces, sock_diag, /proc).
package stack
