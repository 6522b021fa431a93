package server

import (
	"encoding/json"
	"github.com/connlab/connlab/sim/harness"
	"strconv"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
)

// The messages of PROTOCOL.md. Client messages are decoded into inMsg;
// server messages are encoded from the out* types, except event batches,
// which the stream builds byte by byte (see stream.go).

// inMsg is any client message; Type says which fields matter.
type inMsg struct {
	Type     string                     `json:"type"`
	ID       string                     `json:"id"`
	Lab      string                     `json:"lab"`
	Block    string                     `json:"block"`
	Mode     string                     `json:"mode"`
	Params   map[string]json.RawMessage `json:"params"`
	Variants []string                   `json:"variants"`
	Seed     *uint64                    `json:"seed"`
}

type outError struct {
	Type    string `json:"type"` // "error"
	ID      string `json:"id"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

type outQueued struct {
	Type     string `json:"type"` // "queued"
	ID       string `json:"id"`
	Position int    `json:"position"`
}

type variantName struct {
	Name  string `json:"name"`
	Label string `json:"label"`
}

type outStarted struct {
	Type     string                       `json:"type"` // "started"
	ID       string                       `json:"id"`
	Mode     string                       `json:"mode"`
	Block    string                       `json:"block"`
	Title    string                       `json:"title"`
	Variants []variantName                `json:"variants"`
	Params   map[string]map[string]string `json:"params"`
}

type outStats struct {
	Type    string       `json:"type"` // "stats"
	ID      string       `json:"id"`
	Variant string       `json:"variant"`
	Summary *sim.Summary `json:"summary"`
}

type outTruncated struct {
	Type    string `json:"type"` // "truncated"
	ID      string `json:"id"`
	Variant string `json:"variant"`
	Sent    int    `json:"sent"`
}

// doneVariant is one variant of a done message. Model and Compare are only
// set for real runs.
type doneVariant struct {
	Name    string             `json:"name"`
	Label   string             `json:"label"`
	Summary *sim.Summary       `json:"summary"`
	Error   string             `json:"error"`
	Model   *sim.Summary       `json:"model,omitempty"`
	Compare []harness.PhaseRow `json:"compare,omitempty"`
	// HarnessOverheadMS: what the harness adds to a reused call at the
	// variant's RTT (harness.Tare), part of the comparison's tolerance.
	HarnessOverheadMS float64 `json:"harness_overhead_ms,omitempty"`
}

type outDone struct {
	Type      string        `json:"type"` // "done"
	ID        string        `json:"id"`
	Variants  []doneVariant `json:"variants"`
	Checks    []lab.Check   `json:"checks"`
	ElapsedMS float64       `json:"elapsed_ms"`
}

// encode marshals a server message. The out* types cannot fail to encode;
// a failure would be a bug, reported as an error message.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return errorMsg("", "", "internal error: "+err.Error())
	}
	return b
}

func errorMsg(id, field, msg string) []byte {
	b, _ := json.Marshal(outError{Type: "error", ID: id, Field: field, Message: msg})
	return b
}

// appendBatchHead starts an events message; the stream appends the events,
// then appendBatchTail closes it.
func appendBatchHead(b []byte, id, variant string) []byte {
	b = append(b, `{"type":"events","id":`...)
	b = sim.AppendJSONString(b, id)
	b = append(b, `,"variant":`...)
	b = sim.AppendJSONString(b, variant)
	return append(b, `,"events":[`...)
}

// appendBatchTail closes an events message with server_ms, the server's
// clock (Unix milliseconds) when the batch entered the socket's send queue,
// so a page or a benchmark can measure delivery delay.
func appendBatchTail(b []byte, now time.Time) []byte {
	b = append(b, `],"server_ms":`...)
	b = strconv.AppendFloat(b, float64(now.UnixMicro())/1000, 'f', 3, 64)
	return append(b, '}')
}

func droppedMsg(id string, count int) []byte {
	b := append([]byte(`{"type":"dropped","id":`), sim.AppendJSONString(nil, id)...)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(count), 10)
	return append(b, '}')
}
