package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unsafe"

	"github.com/connlab/connlab/sim"
)

// eventKeys are the wire keys of sim.Event's fields; a field not listed
// goes under EventKey's default.
var eventKeys = map[string]string{
	"Kind": "k", "At": "at", "Req": "r", "Call": "c", "Worker": "w", "Conn": "n",
	"NewConn": "nc", "Reused": "ru", "Retried": "rt", "Start": "s", "Queue": "q",
	"NameLookup": "nl", "Connect": "co", "AppConnect": "ac", "StartTransfer": "st", "Total": "t",
	"Handshake": "hs", "LocalPort": "lp", "By": "by", "Reason": "rs", "Error": "er",
}

// EventKey is the wire key of the sim.Event field named field: its short
// key, or for a field without one its name in snake_case (LocalPort:
// local_port).
func EventKey(field string) string {
	if k, ok := eventKeys[field]; ok {
		return k
	}
	var b strings.Builder
	for i, r := range field {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// A Msg travels as wireMsg: the same struct with an event type whose
// fields carry the wire keys as JSON tags. Both are made by reflection
// from sim.Event and Msg, with their layout checked, so that a Msg's
// memory can be encoded and decoded as a wireMsg in one pass, and a field
// added to sim.Event is carried without a change here. (sim.Event's own
// JSON is the public shape, in milliseconds, which loses precision and
// leaves fields out.)
var wireEvent, wireMsg, wireErr = wireTypes()

func wireTypes() (event, msg reflect.Type, err error) {
	et := reflect.TypeFor[sim.Event]()
	seen := map[string]string{}
	event, err = retag(et, func(f reflect.StructField) (reflect.StructField, error) {
		if !f.IsExported() {
			return f, fmt.Errorf("wire: sim.Event.%s is not exported: the wire carries exported fields only", f.Name)
		}
		key := EventKey(f.Name)
		if other, ok := seen[key]; ok {
			return f, fmt.Errorf("wire: sim.Event.%s and .%s would both go under %q: give one a key in eventKeys", other, f.Name, key)
		}
		seen[key] = f.Name
		if f.Name != "Kind" {
			key += ",omitempty"
		}
		f.Tag = reflect.StructTag(`json:"` + key + `"`)
		return f, nil
	})
	if err != nil {
		return nil, nil, err
	}
	msg, err = retag(reflect.TypeFor[Msg](), func(f reflect.StructField) (reflect.StructField, error) {
		if f.Type == reflect.PointerTo(et) {
			f.Type = reflect.PointerTo(event)
		}
		return f, nil
	})
	return event, msg, err
}

// retag builds a struct type like t with each field as change makes it,
// and checks that the two share one layout.
func retag(t reflect.Type, change func(reflect.StructField) (reflect.StructField, error)) (reflect.Type, error) {
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		f := t.Field(i)
		f, err := change(reflect.StructField{Name: f.Name, PkgPath: f.PkgPath, Type: f.Type, Tag: f.Tag, Anonymous: f.Anonymous})
		if err != nil {
			return nil, err
		}
		fields[i] = f
	}
	n := reflect.StructOf(fields)
	if n.Size() != t.Size() {
		return nil, fmt.Errorf("wire: the tagged copy of %s has another layout", t)
	}
	for i := range fields {
		if n.Field(i).Offset != t.Field(i).Offset || n.Field(i).Type.Size() != t.Field(i).Type.Size() {
			return nil, fmt.Errorf("wire: the tagged copy of %s has another layout at %s", t, fields[i].Name)
		}
	}
	return n, nil
}

// asWire views m as a wireMsg: the same memory, the wire's JSON tags.
func asWire(m *Msg) (any, error) {
	if wireErr != nil {
		return nil, wireErr
	}
	return reflect.NewAt(wireMsg, unsafe.Pointer(m)).Interface(), nil
}

func encode(m *Msg) ([]byte, error) {
	v, err := asWire(m)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func decode(b []byte, m *Msg) error {
	v, err := asWire(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// MarshalJSON writes m as a line of the protocol (without the newline).
func (m Msg) MarshalJSON() ([]byte, error) { return encode(&m) }

// UnmarshalJSON reads m from a line of the protocol.
func (m *Msg) UnmarshalJSON(b []byte) error { return decode(b, m) }
