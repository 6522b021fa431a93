package sim

import (
	"reflect"
	"time"
)

// A Phase is one of a call's cumulative times, each measured from the start
// of the call as curl's -w variables are: the wait for a pool connection,
// then curl's time_namelookup, time_connect, time_appconnect,
// time_starttransfer and time_total. The pages draw the interval that ends
// at each time as one segment of a waterfall, with Chrome DevTools' names
// and colours (the segment that ends at namelookup is "DNS lookup").
//
// Phases lists them in order; the CLI table, the Summary's percentiles, the
// lab metrics and the schema read it. Key, Segment, Color and the two
// accessors are written in the table; the rest is derived from them.
type Phase struct {
	Key          string `json:"key"`                     // "namelookup"
	Curl         string `json:"curl,omitempty"`          // curl's -w variable: "time_namelookup" ("" for queue)
	JSON         string `json:"json"`                    // the key of the Event and Summary JSON: "namelookup_ms"
	EventField   string `json:"event_field"`             // the Event field: "NameLookup"
	SummaryField string `json:"summary_field,omitempty"` // the Summary field ("" for queue: the summary has none)
	Segment      string `json:"segment"`                 // the waterfall segment that ends at this time: "dns"
	Label        string `json:"label"`                   // the segment's UI string key (site/i18n): "ph_dns"
	Color        string `json:"color"`                   // the segment's colour, as CSS: "#0d9aa8"

	event func(*Event) time.Duration
	stat  func(*Summary) *Stat // nil for a phase the summary does not hold
}

// Time returns the phase's time in a call event.
func (p *Phase) Time(e *Event) time.Duration { return p.event(e) }

// Stat returns the phase's percentiles in a summary, or false when the
// summary holds none (queue).
func (p *Phase) Stat(s *Summary) (Stat, bool) {
	if p.stat == nil {
		return Stat{}, false
	}
	return *p.stat(s), true
}

var phases = []Phase{
	{Key: "queue", Segment: "queue", Color: "#b9c2cc",
		event: func(e *Event) time.Duration { return e.Queue }},
	{Key: "namelookup", Segment: "dns", Color: "#0d9aa8",
		event: func(e *Event) time.Duration { return e.NameLookup },
		stat:  func(s *Summary) *Stat { return &s.NameLookup }},
	{Key: "connect", Segment: "connect", Color: "#f29f05",
		event: func(e *Event) time.Duration { return e.Connect },
		stat:  func(s *Summary) *Stat { return &s.Connect }},
	{Key: "appconnect", Segment: "tls", Color: "#b65ad5",
		event: func(e *Event) time.Duration { return e.AppConnect },
		stat:  func(s *Summary) *Stat { return &s.AppConnect }},
	{Key: "starttransfer", Segment: "wait", Color: "#36b37e",
		event: func(e *Event) time.Duration { return e.StartTransfer },
		stat:  func(s *Summary) *Stat { return &s.StartTransfer }},
	{Key: "total", Segment: "download", Color: "#1f78d1",
		event: func(e *Event) time.Duration { return e.Total },
		stat:  func(s *Summary) *Stat { return &s.Total }},
}

// curlPhases are the phases a Summary holds, in order.
var curlPhases []Phase

func init() {
	for i := range phases {
		p := &phases[i]
		p.JSON = p.Key + "_ms"
		p.Label = "ph_" + p.Segment
		p.EventField = fieldByJSON(reflect.TypeFor[Event](), p.JSON)
		if p.stat != nil {
			p.Curl = "time_" + p.Key
			p.SummaryField = fieldByJSON(reflect.TypeFor[Summary](), p.JSON)
			curlPhases = append(curlPhases, *p)
		}
	}
}

// fieldByJSON returns the name of t's field whose JSON key is key.
func fieldByJSON(t reflect.Type, key string) string {
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); jsonName(f) == key {
			return f.Name
		}
	}
	panic("sim: " + t.Name() + " has no field " + key)
}

// Phases returns every phase in order, queue first.
func Phases() []Phase { return append([]Phase(nil), phases...) }

// CurlPhases returns curl's five phases, the ones a Summary holds (the
// Phases without queue).
func CurlPhases() []Phase { return append([]Phase(nil), curlPhases...) }
