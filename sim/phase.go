package sim

import (
	"reflect"
	"time"
	"unsafe"
)

// A Phase is one of a call's cumulative times, each measured from the start
// of the call as curl's -w variables are: the wait for a pool connection,
// then curl's time_namelookup, time_connect, time_appconnect,
// time_starttransfer and time_total. The pages draw the interval that ends
// at each time as one segment of a waterfall, with Chrome DevTools' names
// and colours (the segment that ends at namelookup is "DNS lookup").
//
// Phases lists them in order; the Summary's percentiles, the CLI table, the
// lab metrics and the schema read it. Key, Setup, Segment and Color are
// written in the table; the rest is derived: the fields are the Event and
// Summary fields whose JSON key is Key + "_ms" (the Summary has none for
// queue).
type Phase struct {
	Key          string `json:"key"`                     // "namelookup"
	Curl         string `json:"curl,omitempty"`          // curl's -w variable: "time_namelookup" ("" for queue)
	JSON         string `json:"json"`                    // the key of the Event and Summary JSON: "namelookup_ms"
	EventField   string `json:"event_field"`             // the Event field: "NameLookup"
	SummaryField string `json:"summary_field,omitempty"` // the Summary field ("" for queue: the summary has none)
	Setup        bool   `json:"setup,omitempty"`         // part of opening a connection: zero on a call that reuses one, as curl reports it
	Segment      string `json:"segment"`                 // the waterfall segment that ends at this time: "dns"
	Label        string `json:"label"`                   // the segment's UI string key (sim/i18n): "ph_dns"
	Color        string `json:"color"`                   // the segment's colour, as CSS: "#0d9aa8"

	// Offsets of the fields in Event and Summary (statOff: when
	// SummaryField is set), found by reflection at init. The engine reads
	// every call's phases through them: a closure per phase and call slowed
	// it down visibly, reflection would more.
	eventOff, statOff uintptr
}

// Time returns the phase's time in a call event.
func (p *Phase) Time(e *Event) time.Duration { return durationAt(e, p.eventOff) }

// durationAt reads the time.Duration field at offset off of e.
func durationAt(e *Event, off uintptr) time.Duration {
	return *(*time.Duration)(unsafe.Add(unsafe.Pointer(e), off))
}

// Stat returns the phase's percentiles in a summary, or false when the
// summary holds none (queue).
func (p *Phase) Stat(s *Summary) (Stat, bool) {
	if p.SummaryField == "" {
		return Stat{}, false
	}
	return *p.stat(s), true
}

func (p *Phase) stat(s *Summary) *Stat { return (*Stat)(unsafe.Add(unsafe.Pointer(s), p.statOff)) }

// The phases' keys, for code that names one (the harness's tolerance
// counts the round trips each holds).
const (
	PhaseQueue         = "queue"
	PhaseNameLookup    = "namelookup"
	PhaseConnect       = "connect"
	PhaseAppConnect    = "appconnect"
	PhaseStartTransfer = "starttransfer"
	PhaseTotal         = "total"
)

var phases = []Phase{
	{Key: PhaseQueue, Segment: "queue", Color: "#b9c2cc"},
	{Key: PhaseNameLookup, Setup: true, Segment: "dns", Color: "#0d9aa8"},
	{Key: PhaseConnect, Setup: true, Segment: "connect", Color: "#f29f05"},
	{Key: PhaseAppConnect, Setup: true, Segment: "tls", Color: "#b65ad5"},
	{Key: PhaseStartTransfer, Segment: "wait", Color: "#36b37e"},
	{Key: PhaseTotal, Segment: "download", Color: "#1f78d1"},
}

// curlPhases are the phases a Summary holds, in order, and curlOffsets
// their offsets in Event. The Collector keeps an array of numCurlPhases
// quantiles, which the engine loops over faster than over a slice.
var (
	curlPhases  []Phase
	curlOffsets [numCurlPhases]uintptr
)

// numCurlPhases is how many phases a Summary holds (init checks it).
const numCurlPhases = 5

func init() {
	for i := range phases {
		p := &phases[i]
		p.JSON = p.Key + "_ms"
		p.Label = "ph_" + p.Segment
		f, ok := fieldByJSON(reflect.TypeFor[Event](), p.JSON)
		if !ok || f.Type != durationType {
			panic("sim: phase " + p.Key + ": Event has no time.Duration field " + p.JSON)
		}
		p.EventField, p.eventOff = f.Name, f.Offset
		if f, ok := fieldByJSON(reflect.TypeFor[Summary](), p.JSON); ok {
			if f.Type != reflect.TypeFor[Stat]() {
				panic("sim: phase " + p.Key + ": Summary." + f.Name + " is not a Stat")
			}
			p.SummaryField, p.statOff = f.Name, f.Offset
			p.Curl = "time_" + p.Key
			if len(curlPhases) == numCurlPhases {
				panic("sim: the Summary holds more phases than numCurlPhases: raise it")
			}
			curlOffsets[len(curlPhases)] = p.eventOff
			curlPhases = append(curlPhases, *p)
		}
	}
	if len(curlPhases) != numCurlPhases {
		panic("sim: the Summary holds fewer phases than numCurlPhases: lower it")
	}
}

// fieldByJSON returns t's field whose JSON key is key.
func fieldByJSON(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); jsonName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// Phases returns every phase in order, queue first.
func Phases() []Phase { return append([]Phase(nil), phases...) }

// CurlPhases returns curl's five phases, the ones a Summary holds (the
// Phases without queue).
func CurlPhases() []Phase { return append([]Phase(nil), curlPhases...) }
