// Package stack runs the source article's real stack on 127.0.0.1: a load
// generator → nginx → a Python app (Flask, under gunicorn's threaded workers
// or Flask's own development server) → redis-server, with Debian's
// programs, and measures it per hop and per side: connections opened,
// sockets by TCP state (TIME_WAIT on the connecting and on the accepting
// end), CPU time per tier, throughput and latency.
//
// A run measures a window, and may measure a calibration window beside
// it, interleaved in slices so both see the same machine (Measure);
// Calibrate fits each tier's CPU per request and per connection over the
// calibration windows of several variants (calibrate.go). Each window also
// reports the machine's other work, the load generator's stalls and a CPU
// speed probe (probe_linux.go).
//
// RunIsolated runs one Spec in network, PID and mount namespaces of its own,
// so that the sockets it counts are its own and nothing outlives it;
// stackrun runs many and writes a Record (versions, machine, runs), as in
// labs/nginx-keepalive.stack-runs.json. The app (app.py) and nginx's
// configuration (nginx.conf.tmpl) are embedded.
//
// Linux only (namespaces, sock_diag, /proc).
package stack
