// Package measure reads a reader's own measurements of real calls (a HAR
// from a browser, curl's -w '%{json}' lines, k6's --out json points) into
// one list of calls, and sums them up per host: how often connections were
// reused and what reuse would have saved. It only reads files; it sends
// nothing anywhere.
package measure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Format is one of the formats Read understands.
type Format string

const (
	HAR  Format = "har"  // HAR 1.2, as Chromium exports it
	Curl Format = "curl" // curl -w '%{json}' (7.70 and later), one object a line
	K6   Format = "k6"   // k6 run --out json, one object a line
)

// Formats lists the formats, for flags and messages.
var Formats = []Format{HAR, Curl, K6}

// ParseFormat checks a format's name ("" means: detect it).
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return "", nil
	}
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q (har, curl or k6)", s)
}

// Limits bound what Read accepts, so that a hostile file costs little.
type Limits struct {
	MaxBytes int64 // a larger input is refused before it is read whole
	MaxCalls int   // more calls than this are refused
}

// DefaultLimits: 50 MB and a million calls.
var DefaultLimits = Limits{MaxBytes: 50 << 20, MaxCalls: 1_000_000}

// Call is one measured request. Times are in milliseconds. The cumulative
// times are curl's (each from the call's start, none smaller than the one
// before, as sim run's events give them); the durations are the
// connection's setup phases, 0 when the call did not go through them.
type Call struct {
	Host string `json:"host"` // scheme://host:port, the pool a client keys connections by
	URL  string `json:"url"`
	// Start is when the call started; HasStart is false when the format
	// gives no start (curl).
	Start    time.Time `json:"start,omitzero"`
	HasStart bool      `json:"-"`

	NameLookup    float64 `json:"namelookup_ms"`
	Connect       float64 `json:"connect_ms"`
	AppConnect    float64 `json:"appconnect_ms"`
	StartTransfer float64 `json:"starttransfer_ms"`
	Total         float64 `json:"total_ms"`

	DNS float64 `json:"dns_ms"` // the lookup (k6 reports none apart: 0)
	TCP float64 `json:"tcp_ms"` // the TCP handshake
	TLS float64 `json:"tls_ms"` // the TLS handshake

	NewConn bool   `json:"new_connection"` // the call opened a connection
	ConnID  string `json:"connection,omitempty"`
	// Source is where the call is in the input: "entry 3" (HAR, from 0)
	// or "line 7" (curl, k6: from 1; k6's first point of the request).
	Source string `json:"source"`
}

// Setup is the call's connection setup: DNS, TCP and TLS.
func (c *Call) Setup() float64 { return c.DNS + c.TCP + c.TLS }

// Error is an input Read refused: where (a HAR entry, a line) and which
// field, if one is to blame.
type Error struct {
	Format Format
	Where  string // "entry 3", "line 7", "" for the whole input
	Field  string // "timings.connect", "" when no one field is to blame
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	// "har entry 3: ", "curl input: "; nothing when neither is known
	// (the caller names the file).
	if e.Format != "" {
		b.WriteString(string(e.Format))
		b.WriteByte(' ')
		if e.Where == "" {
			b.WriteString("input: ")
		}
	}
	if e.Where != "" {
		b.WriteString(e.Where)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrTooLarge is wrapped by the error for an input over Limits.MaxBytes.
var ErrTooLarge = errors.New("input too large")

// Read reads all of r (at most lim.MaxBytes) in format f, or in the format
// its content shows when f is "". It returns the calls in the input's order
// and the format read.
func Read(r io.Reader, f Format, lim Limits) ([]Call, Format, error) {
	data, err := io.ReadAll(io.LimitReader(r, lim.MaxBytes+1))
	if err != nil {
		return nil, f, err
	}
	if int64(len(data)) > lim.MaxBytes {
		return nil, f, fmt.Errorf("%w: more than %s (the limit)", ErrTooLarge, Size(lim.MaxBytes))
	}
	return Parse(data, f, lim)
}

// Size writes a byte count for messages: "50 MB".
func Size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Parse is Read on bytes already in memory (the size limit is not checked).
func Parse(data []byte, f Format, lim Limits) ([]Call, Format, error) {
	if f == "" {
		var err error
		if f, err = Detect(data); err != nil {
			return nil, "", err
		}
	}
	var calls []Call
	var err error
	switch f {
	case HAR:
		calls, err = parseHAR(data, lim)
	case Curl:
		calls, err = parseCurl(data, lim)
	case K6:
		calls, err = parseK6(data, lim)
	default:
		return nil, f, fmt.Errorf("unknown format %q (har, curl or k6)", f)
	}
	return calls, f, err
}

// Detect tells the format from the first JSON value: an object with "log"
// is a HAR, one with "type" and "metric" a k6 line, one with curl's
// "time_total" a curl line.
func Detect(data []byte) (Format, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return "", &Error{Msg: "empty: no calls to read"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var first map[string]json.RawMessage
	if err := dec.Decode(&first); err != nil {
		return "", &Error{Msg: "unknown format: the input does not start with a JSON object (a HAR, curl -w '%{json}' lines or k6 --out json lines)"}
	}
	switch {
	case first["log"] != nil:
		return HAR, nil
	case first["type"] != nil && first["metric"] != nil:
		return K6, nil
	case first["time_total"] != nil:
		return Curl, nil
	}
	return "", &Error{Msg: "unknown format: the first object has none of \"log\" (HAR), \"time_total\" (curl -w '%{json}'), \"type\" and \"metric\" (k6 --out json)"}
}

// fields is a JSON object whose values are read one by one, so that a wrong
// type names its field.
type fields map[string]json.RawMessage

// object decodes raw as a JSON object.
func object(raw json.RawMessage) (fields, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m fields
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// kind names a JSON value's type for messages.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// field reads one value of an object; prefix names the object for messages.
type reader struct {
	format Format
	where  string
}

func (r reader) err(field, format string, a ...any) *Error {
	return &Error{Format: r.format, Where: r.where, Field: field, Msg: fmt.Sprintf(format, a...)}
}

// number reads a finite number; required says whether it may be missing
// (then ok is false).
func (r reader) number(m fields, key, name string, required bool) (v float64, ok bool, err error) {
	raw, present := m[key]
	if !present {
		if required {
			return 0, false, r.err(name, "missing")
		}
		return 0, false, nil
	}
	raw = bytes.TrimSpace(raw)
	if kind(raw) != "a number" {
		return 0, false, r.err(name, "%s where a number belongs", kind(raw))
	}
	v, perr := strconv.ParseFloat(string(raw), 64)
	if perr != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false, r.err(name, "%s is not a finite number", raw)
	}
	return v, true, nil
}

// string reads a string.
func (r reader) string(m fields, key, name string, required bool) (string, bool, error) {
	raw, present := m[key]
	if !present {
		if required {
			return "", false, r.err(name, "missing")
		}
		return "", false, nil
	}
	var s string
	if kind(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
		return "", false, r.err(name, "%s where a string belongs", kind(raw))
	}
	return s, true, nil
}

// host is the pool key of a URL: scheme://host:port.
func (r reader) host(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || u.Scheme == "" {
		return "", r.err(name, "%q is not an absolute URL", clip(raw))
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https", "wss":
			port = "443"
		case "http", "ws":
			port = "80"
		default:
			return "", r.err(name, "%q has no port and its scheme none by default", clip(raw))
		}
	}
	h := strings.ToLower(u.Hostname())
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return scheme + "://" + h + ":" + port, nil
}

// clip shortens a value quoted in a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// tooMany is the error for more calls than the limit.
func tooMany(f Format, where string, lim Limits) error {
	return &Error{Format: f, Where: where, Msg: fmt.Sprintf("more than %d calls (the limit)", lim.MaxCalls)}
}
