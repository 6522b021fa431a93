package sim

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestPhaseTable: each phase names the Event and Summary fields its
// accessors read, under its JSON key, and curl's phases are in order.
func TestPhaseTable(t *testing.T) {
	et, st := reflect.TypeFor[Event](), reflect.TypeFor[Summary]()
	var keys []string
	for i, p := range Phases() {
		keys = append(keys, p.Key)
		var e Event
		f, ok := et.FieldByName(p.EventField)
		if !ok || f.Type != durationType || jsonName(f) != p.JSON {
			t.Errorf("%s: Event.%s: %v %v", p.Key, p.EventField, ok, f.Type)
			continue
		}
		want := time.Duration(i+1) * time.Millisecond
		reflect.ValueOf(&e).Elem().FieldByIndex(f.Index).SetInt(int64(want))
		if got := p.Time(&e); got != want {
			t.Errorf("%s: Time reads %v, Event.%s is %v", p.Key, got, p.EventField, want)
		}
		if p.Label != "ph_"+p.Segment || len(p.Color) != 7 || p.Color[0] != '#' {
			t.Errorf("%s: label %q, segment %q, colour %q", p.Key, p.Label, p.Segment, p.Color)
		}
		stat, ok := p.Stat(&Summary{})
		if (p.SummaryField == "") != !ok || (p.Curl == "") != !ok || stat != (Stat{}) {
			t.Errorf("%s: summary field %q, curl %q, stat %v %v", p.Key, p.SummaryField, p.Curl, ok, stat)
		}
		if !ok {
			continue
		}
		f, ok = st.FieldByName(p.SummaryField)
		if !ok || f.Type != reflect.TypeFor[Stat]() || jsonName(f) != p.JSON {
			t.Errorf("%s: Summary.%s: %v %v", p.Key, p.SummaryField, ok, f.Type)
			continue
		}
		var s Summary
		w := Stat{P50: float64(i)}
		reflect.ValueOf(&s).Elem().FieldByIndex(f.Index).Set(reflect.ValueOf(w))
		if got, _ := p.Stat(&s); got != w {
			t.Errorf("%s: Stat reads %v, Summary.%s is %v", p.Key, got, p.SummaryField, w)
		}
	}
	if want := []string{"queue", "namelookup", "connect", "appconnect", "starttransfer", "total"}; !slices.Equal(keys, want) {
		t.Errorf("phases %q, want %q", keys, want)
	}
	var curl []string
	for _, p := range CurlPhases() {
		curl = append(curl, p.Curl)
	}
	if want := []string{"time_namelookup", "time_connect", "time_appconnect", "time_starttransfer", "time_total"}; !slices.Equal(curl, want) {
		t.Errorf("curl phases %q, want %q", curl, want)
	}
}

// TestCollectorFillsEveryCurlPhase: the summary's percentiles of each phase
// come from that phase's time in the events.
func TestCollectorFillsEveryCurlPhase(t *testing.T) {
	var c Collector
	for i := 1; i <= 3; i++ {
		e := Event{Kind: KindCall, NewConn: true}
		v := reflect.ValueOf(&e).Elem()
		for j, p := range CurlPhases() {
			v.FieldByName(p.EventField).SetInt(int64(time.Duration(10*(j+1)+i) * time.Millisecond))
		}
		c.Add(&e)
	}
	s := c.Summary()
	for j, p := range CurlPhases() {
		st, _ := p.Stat(&s)
		if want := float64(10*(j+1) + 2); st.P50 != want || st.Mean != want {
			t.Errorf("%s: %+v, want p50 = mean = %g", p.Key, st, want)
		}
	}
	var empty Collector
	if s := empty.Summary(); s.Total != (Stat{}) || s.NameLookup != (Stat{}) {
		t.Errorf("no calls: %+v", s)
	}
}

// TestSetupPhases: a call on a kept connection has the setup phases zero
// and the others not; a call that opens one (with DNS and TLS) has them all.
func TestSetupPhases(t *testing.T) {
	s := Default()
	s.Requests, s.Reuse, s.ServerTime = 3, ReuseProcess, time.Millisecond
	var news, reused int
	_, err := Run(context.Background(), s, Options{Seed: 1, Sink: func(e *Event) {
		if e.Kind != KindCall {
			return
		}
		if e.NewConn {
			news++
		} else {
			reused++
		}
		for _, p := range CurlPhases() {
			if zero := p.Time(e) == 0; zero != (p.Setup && !e.NewConn) {
				t.Errorf("call %d (new %v): %s = %v", e.Req, e.NewConn, p.Key, p.Time(e))
			}
		}
	}})
	if err != nil || news != 1 || reused != 2 {
		t.Fatalf("%v: %d new, %d reused", err, news, reused)
	}
}
