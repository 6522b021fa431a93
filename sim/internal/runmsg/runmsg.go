// Package runmsg holds the run messages (PROTOCOL.md) that sim serve (package
// server) and the model in the page (package wasm) both send, so that a
// widget reads the same JSON from either.
package runmsg

import "github.com/connlab/connlab/sim"

// VariantName is a variant of a started message.
type VariantName struct {
	Name  string `json:"name"`
	Label string `json:"label"`
}

// Started opens a run: its block, variants and each variant's parameters.
type Started struct {
	Type     string                       `json:"type"` // "started"
	ID       string                       `json:"id"`
	Mode     string                       `json:"mode"`
	Block    string                       `json:"block"`
	Title    string                       `json:"title"`
	Variants []VariantName                `json:"variants"`
	Params   map[string]map[string]string `json:"params"`
}

// Stats is a variant's summary, sent when it ends.
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
