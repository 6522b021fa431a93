// Package runsvc is the run service that `sim serve` (package server, over
// WebSocket) and the model in the page (package wasm, in the page's worker)
// both are: the run messages of sim/server/PROTOCOL.md, the checks and
// limits of a run request (Planner), the batching of a run's events
// (Batcher), a model run from its started message to its done message
// (Model) and the error message of a refusal or a failure (ErrorOf),
// written once so that a widget gets the same answer from either. The
// transports keep what is theirs (Out, BatchOut): decoding, encoding,
// queues, timers and, for the server, real runs.
//
// The page's .wasm links this package: it uses no encoding/json, fmt or os
// (msgf formats its messages; each transport encodes them, the page's with
// jsonlite).
package runsvc

import (
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
)

// RunMode is what a run runs: the model, or the real software on loopback.
type RunMode string

const (
	ModeModel RunMode = "model" // the simulator (also when a run names none)
	ModeReal  RunMode = "real"  // real servers and clients on this machine (sim serve only)
)

// RunModes lists the modes, for the schema.
var RunModes = []RunMode{ModeModel, ModeReal}

// The messages of PROTOCOL.md, each declared once. A message's Type is
// its literal, set by whoever builds it.

// Run starts a run of one block (client → server).
type Run struct {
	Type  string  `json:"type"` // "run"
	ID    string  `json:"id"`
	Lab   string  `json:"lab"`
	Block string  `json:"block"`
	Mode  RunMode `json:"mode,omitempty"` // none: model
	// Params: scenario key → value, as JSON decodes it (a string, a number,
	// a boolean…).
	Params   map[string]any `json:"params,omitempty"`
	Variants []string       `json:"variants,omitempty"` // none: all
	Seed     *uint64        `json:"seed,omitempty"`     // none: 1
}

// Cancel stops a run (client → server). The transports decode it as a
// Run, whose fields include its own.
type Cancel struct {
	Type string `json:"type"` // "cancel"
	ID   string `json:"id"`
}

// LabLoad gives the page's model a lab: the JSON text of `sim lab --json`
// in a language (the page's model only).
type LabLoad struct {
	Type string `json:"type"` // "lab"
	ID   string `json:"id"`
	Lab  string `json:"lab"`
	Lang string `json:"lang"`
	Text string `json:"text"`
}

// ExercisesReq asks the page's model for a lab's exercises for a seed, as
// GET /exercise/api answers them (the page's model only).
type ExercisesReq struct {
	Type string  `json:"type"` // "exercises"
	ID   string  `json:"id"`
	Lab  string  `json:"lab"`
	Lang string  `json:"lang,omitempty"` // none: "en"
	Seed *uint64 `json:"seed,omitempty"` // none: 0
}

// Error refuses a message or reports why a run stopped (server → client).
type Error struct {
	Type    string `json:"type"` // "error"
	ID      string `json:"id"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Queued is a real run's place in the server's queue (1 = next).
type Queued struct {
	Type     string `json:"type"` // "queued"
	ID       string `json:"id"`
	Position int    `json:"position"`
}

// VariantName is a variant of a started message.
type VariantName struct {
	Name  string `json:"name"`
	Label string `json:"label"`
}

// Started opens a run: its block, variants and each variant's parameters.
type Started struct {
	Type     string                       `json:"type"` // "started"
	ID       string                       `json:"id"`
	Mode     RunMode                      `json:"mode"`
	Block    string                       `json:"block"`
	Title    string                       `json:"title"`
	Variants []VariantName                `json:"variants"`
	Params   map[string]map[string]string `json:"params"`
}

// Events is a batch of a variant's events, in order. The transports build
// it byte by byte (Batcher, AppendEventsHead, AppendEventsTail); the type
// is its schema. Each event is written as sim.Event.AppendCompactJSON
// writes it.
type Events struct {
	Type    string      `json:"type"` // "events"
	ID      string      `json:"id"`
	Variant string      `json:"variant"`
	Events  []sim.Event `json:"events"`
	// ServerMS: the server's clock (Unix milliseconds) when the batch
	// entered the socket's send queue; the page's model sends none.
	ServerMS float64 `json:"server_ms,omitempty"`
}

// Stats is a variant's summary: in model mode once, when it ends; in real
// mode about once a second.
type Stats struct {
	Type    string       `json:"type"` // "stats"
	ID      string       `json:"id"`
	Variant string       `json:"variant"`
	Summary *sim.Summary `json:"summary"`
}

// Truncated says a variant's events stopped at Sent (its summary is whole).
type Truncated struct {
	Type    string `json:"type"` // "truncated"
	ID      string `json:"id"`
	Variant string `json:"variant"`
	Sent    int    `json:"sent"`
}

// Dropped says how many of a real run's event batches a page that read too
// slowly lost (the server builds it byte by byte; this is its schema).
type Dropped struct {
	Type  string `json:"type"` // "dropped"
	ID    string `json:"id"`
	Count int    `json:"count"`
}

// Done ends a run.
type Done struct {
	Type     string        `json:"type"` // "done"
	ID       string        `json:"id"`
	Variants []DoneVariant `json:"variants"`
	// Checks: the block's expectations, when the block ran as written in
	// model mode; else none ([]).
	Checks    []lab.Check `json:"checks"`
	ElapsedMS float64     `json:"elapsed_ms"`
}

// DoneVariant is one variant of a done message. The fields after Error are
// only set for real runs.
type DoneVariant struct {
	Name    string       `json:"name"`
	Label   string       `json:"label"`
	Summary *sim.Summary `json:"summary"`
	Error   string       `json:"error"`
	// Model: the model's summary of the scenario the real run ran;
	// Compare: the phases of the two set side by side.
	Model   *sim.Summary `json:"model,omitempty"`
	Compare []PhaseRow   `json:"compare,omitempty"`
	// HarnessOverheadMS: what the harness adds to a reused call at the
	// variant's RTT (harness.Tare), part of the comparison's tolerance
	// once for each round trip of a phase.
	HarnessOverheadMS float64 `json:"harness_overhead_ms,omitempty"`
	// Verdict of a real run's comparison (harness.PhaseVerdict): agree,
	// disagree or inconclusive, with Why; BusyCPUs is how many CPUs other
	// programs used on average during the run when the machine was busy.
	Verdict  string  `json:"verdict,omitempty"`
	Why      string  `json:"why,omitempty"`
	BusyCPUs float64 `json:"busy_cpus,omitempty"`
	// A real run's: the software that ran (runtime.name), what its
	// probing script printed (checks), and for a variant the model rejects
	// the model's words (model_error) beside the real software's (error).
	Runtime    map[string]string `json:"runtime,omitempty"`
	Checks     map[string]string `json:"checks,omitempty"`
	ModelError string            `json:"model_error,omitempty"`
}

// PhaseRow sets one phase's measured median against the model's (a real
// run's Compare; package harness computes it and names it harness.PhaseRow).
// It is declared here so that Done is, without the page's model linking
// the harness.
type PhaseRow struct {
	// Phase is one of curl's five (namelookup, connect, appconnect,
	// starttransfer, total), or "total, new conn" / "total, reused": the
	// total of the calls that opened a connection / ran on a kept one.
	Phase         string  `json:"phase"`
	ModelMS       float64 `json:"model_ms"`
	MeasuredMS    float64 `json:"measured_ms"` // median
	MeasuredP90MS float64 `json:"measured_p90_ms"`
	ErrorPct      float64 `json:"error_pct"` // (measured - model) / model; 0 when the model says 0
	ToleranceMS   float64 `json:"tolerance_ms"`
	OK            bool    `json:"ok"`
	// Note says why a row is shown but not held to the tolerance (OK is
	// then true and ToleranceMS 0).
	Note string `json:"note,omitempty"`
	// OneCallMS is the part of ToleranceMS that is one call's own
	// variation (Tolerance.OneCall): the median is one or two calls.
	OneCallMS float64 `json:"one_call_ms,omitempty"`
}

// LabLoaded answers LabLoad: the lab is loaded, with its number of blocks
// (the page's model only).
type LabLoaded struct {
	Type   string `json:"type"` // "lab"
	ID     string `json:"id"`
	Lab    string `json:"lab"`
	Lang   string `json:"lang"`
	Blocks int    `json:"blocks"`
}

// Exercises answers ExercisesReq: the fields of GET /exercise/api's answer
// (class.APIResponse), with the request's id (the page's model only).
type Exercises struct {
	Type      string          `json:"type"` // "exercises"
	ID        string          `json:"id"`
	Lab       string          `json:"lab"`
	Title     string          `json:"title"`
	Lang      string          `json:"lang"`
	Seed      uint64          `json:"seed"`
	Hidden    bool            `json:"hidden"`
	Exercises []*lab.Instance `json:"exercises"`
}
