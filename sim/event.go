package sim

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// Kind says what an Event records.
type Kind uint8

const (
	// KindCall is one upstream call (one curl_exec, one Redis command, one
	// proxied request) with curl's phase times.
	KindCall Kind = iota
	// KindOpen: a connection was established (At is when connect() started).
	KindOpen
	// KindIdle: a connection went back to its cache, unused.
	KindIdle
	// KindClose: a side closed a connection (By, Reason).
	KindClose
	// KindTimeWait: a socket entered TIME_WAIT on side By.
	KindTimeWait
	// KindTimeWaitEnd: a TIME_WAIT socket expired, or was reused (Reason "reused").
	KindTimeWaitEnd
	// KindPortError: connect() failed with EADDRNOTAVAIL.
	KindPortError
	// KindRequest: a web request finished (Total is its response time as the
	// user saw it).
	KindRequest
)

var kindNames = [...]string{"call", "open", "idle", "close", "time_wait", "time_wait_end", "port_error", "request"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

// An Event is the one record that both the model and the real-server harness
// emit, so every consumer (tables, JSON, the WebSocket stream, model-versus-
// measured tests) is written once.
//
// For calls, the phase times follow curl's -w variables: each is measured
// from the start of the call (Start), cumulatively. As curl reports them, a
// call on a reused connection has NameLookup, Connect and AppConnect zero, and
// a call without TLS has AppConnect zero.
//
// The tags say what AppendJSON writes (it does not read them; a test holds
// the two together): the JSON key, the kinds of event that carry the field
// (every kind without a kinds tag) and the vocabulary type of its values.
// Every key but kind and at_ms is left out of the compact form when zero.
type Event struct {
	Kind Kind `json:"kind"`
	// Hop is the hop of a chain of tiers, from 1 (the load to the first
	// tier); 0 for a block without tiers, whose one hop is the workers'
	// calls to the upstream (chain_one.go). A byte, kept beside Kind so the record does
	// not grow (MaxTiers is 8).
	Hop    uint8         `json:"hop,omitempty"`
	At     time.Duration `json:"at_ms"`                                                 // run time of the event; for calls, when the call ended
	Req    int           `json:"req,omitempty" kinds:"call,open,port_error,request"`    // web request number, from 1
	Call   int           `json:"call,omitempty" kinds:"call,open,port_error"`           // call number within the request, from 1
	Worker int           `json:"worker,omitempty" kinds:"call,open,port_error,request"` // worker process, from 1 (0: none)
	Conn   int           `json:"conn,omitempty" kinds:"call,open,idle,close"`           // connection id, from 1 (0: none)

	// Calls.
	NewConn       bool          `json:"new_conn,omitempty" kinds:"call"` // the call opened a connection (num_connects = 1)
	Reused        bool          `json:"reused,omitempty" kinds:"call"`   // the call ran on a kept connection
	Retried       bool          `json:"retried,omitempty" kinds:"call"`  // a reused connection was found closed by the server and the call was sent again
	Start         time.Duration `json:"start_ms,omitempty" kinds:"call,request"`
	Queue         time.Duration `json:"queue_ms,omitempty" kinds:"call"` // waiting for a pool connection, included in the phases below
	NameLookup    time.Duration `json:"namelookup_ms,omitempty" kinds:"call"`
	Connect       time.Duration `json:"connect_ms,omitempty" kinds:"call"`
	AppConnect    time.Duration `json:"appconnect_ms,omitempty" kinds:"call"`
	StartTransfer time.Duration `json:"starttransfer_ms,omitempty" kinds:"call"`
	Total         time.Duration `json:"total_ms,omitempty" kinds:"call,request"`
	Handshake     Handshake     `json:"handshake,omitempty" kinds:"call"` // empty: no TLS handshake

	// Sockets.
	LocalPort int         `json:"local_port,omitempty" kinds:"call,open,idle,close,time_wait,time_wait_end"`
	By        Side        `json:"by,omitempty" kinds:"close,time_wait,time_wait_end"`
	Reason    CloseReason `json:"reason,omitempty" kinds:"close,time_wait_end"`
	Error     string      `json:"error,omitempty" kinds:"call,port_error,request"` // begins with an ErrorKind for the failures the lessons are about
}

// eventExtra are the keys AppendJSON writes that no field holds.
var eventExtra = []Field{
	{Name: "num_connects", Type: "integer", Optional: true, Kinds: []string{"call"}}, // NumConnects
}

// NumConnects is curl's CURLINFO_NUM_CONNECTS for a call.
func (e *Event) NumConnects() int {
	if e.NewConn {
		return 1
	}
	return 0
}

// AppendJSON appends e as one JSON object (no newline) to b. Times are
// milliseconds with microsecond precision. Only fields meaningful for the
// kind are written. It does not allocate beyond growing b.
func (e *Event) AppendJSON(b []byte) []byte { return e.appendJSON(b, false) }

// AppendCompactJSON is AppendJSON without the fields whose value is false,
// zero or empty (a reader takes a missing field as its zero value): a
// reused call's event is a third shorter. The WebSocket stream uses it.
func (e *Event) AppendCompactJSON(b []byte) []byte { return e.appendJSON(b, true) }

func (e *Event) appendJSON(b []byte, compact bool) []byte {
	ms := func(b []byte, name string, d time.Duration) []byte {
		if compact && d == 0 {
			return b
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		return appendMS(b, d)
	}
	flag := func(b []byte, name string, v bool) []byte {
		if compact && !v {
			return b
		}
		return appendBool(b, name, v)
	}
	b = append(b, `{"kind":"`...)
	b = append(b, e.Kind.String()...)
	b = append(b, `","at_ms":`...)
	b = appendMS(b, e.At)
	b = appendInt(b, "req", e.Req)
	b = appendInt(b, "call", e.Call)
	b = appendInt(b, "worker", e.Worker)
	b = appendInt(b, "conn", e.Conn)
	b = appendInt(b, "hop", int(e.Hop))
	switch e.Kind {
	case KindCall:
		b = flag(b, "new_conn", e.NewConn)
		b = flag(b, "reused", e.Reused)
		if n := e.NumConnects(); n != 0 || !compact {
			b = append(b, `,"num_connects":`...)
			b = strconv.AppendInt(b, int64(n), 10)
		}
		if e.Retried {
			b = appendBool(b, "retried", true)
		}
		b = ms(b, "start_ms", e.Start)
		if e.Queue > 0 {
			b = ms(b, "queue_ms", e.Queue)
		}
		b = ms(b, "namelookup_ms", e.NameLookup)
		b = ms(b, "connect_ms", e.Connect)
		b = ms(b, "appconnect_ms", e.AppConnect)
		b = ms(b, "starttransfer_ms", e.StartTransfer)
		b = ms(b, "total_ms", e.Total)
		if e.Handshake != "" {
			b = appendStr(b, "handshake", string(e.Handshake))
		}
	case KindRequest:
		b = ms(b, "start_ms", e.Start)
		b = ms(b, "total_ms", e.Total)
	}
	if e.LocalPort != 0 {
		b = appendInt(b, "local_port", e.LocalPort)
	}
	if e.By != "" {
		b = appendStr(b, "by", string(e.By))
	}
	if e.Reason != "" {
		b = appendStr(b, "reason", string(e.Reason))
	}
	if e.Error != "" || (e.Kind == KindCall && !compact) {
		b = appendStr(b, "error", e.Error)
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler with AppendJSON.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

func appendMS(b []byte, d time.Duration) []byte {
	us := int64(d / time.Microsecond)
	if us <= -1e15 || us >= 1e15 {
		return strconv.AppendFloat(b, float64(us)/1000, 'f', -1, 64)
	}
	// Below 10^15 µs the value has at most 15 significant digits, so its
	// exact decimal is the shortest that reads back as float64(us)/1000:
	// the bytes strconv.AppendFloat writes, without its float formatting,
	// which was a fifth of a run's time with the page's events.
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1000, 10)
	if frac := us % 1000; frac != 0 {
		digits := [4]byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := 4
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, digits[:n]...)
	}
	return b
}

func appendInt(b []byte, name string, v int) []byte {
	if v == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, int64(v), 10)
}

func appendBool(b []byte, name string, v bool) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendBool(b, v)
}

func appendStr(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return AppendJSONString(b, v)
}

// AppendJSONString appends s as a JSON string literal.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// MS converts a duration to float milliseconds.
func MS(d time.Duration) float64 { return float64(d) / 1e6 }

// eventRule is what CheckEvent knows of one Event field, from its tags.
type eventRule struct {
	index  int
	name   string
	kinds  uint32 // bit k: Kind k carries it
	values []string
}

var eventRules = func() []eventRule {
	var rules []eventRule
	t := reflect.TypeFor[Event]()
	for i := 1; i < t.NumField(); i++ { // Kind itself is always there
		f := t.Field(i)
		r := eventRule{index: i, name: jsonName(f), kinds: 1<<len(kindNames) - 1}
		if tag := f.Tag.Get("kinds"); tag != "" {
			r.kinds = 0
			for _, s := range strings.Split(tag, ",") {
				k, ok := ParseKind(s)
				if !ok {
					panic("sim: Event." + f.Name + ": unknown kind " + s)
				}
				r.kinds |= 1 << k
			}
		}
		if e, ok := enumFor(f); ok {
			r.values = e.values
		}
		rules = append(rules, r)
	}
	return rules
}()

// CheckEvent reports a field set on an event whose kind does not carry it
// (Event's kinds tags) or a value outside its vocabulary type (its enum
// tag). The tests of whatever emits events use it.
func CheckEvent(e *Event) error {
	if int(e.Kind) >= len(kindNames) {
		return msgf.Errorf("unknown kind %d", e.Kind)
	}
	v := reflect.ValueOf(e).Elem()
	for _, r := range eventRules {
		f := v.Field(r.index)
		if f.IsZero() {
			continue
		}
		if r.kinds&(1<<e.Kind) == 0 {
			return msgf.Errorf("a %s event carries %s = %v", e.Kind, r.name, f.Interface())
		}
		if r.values != nil && !slices.Contains(r.values, f.String()) {
			return msgf.Errorf("a %s event: %s = %q is not one of %q", e.Kind, r.name, f.String(), r.values)
		}
	}
	return nil
}
