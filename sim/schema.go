package sim

import (
	"reflect"
	"strings"
)

// Schema describes what the simulator reads and writes, for programs that
// are not Go (the site's TypeScript types are generated from it: sim schema
// --ts); `sim schema --json` prints it. Every part is derived from the Go definitions:
// the scenario's struct tags, the vocabulary, the phase table and the JSON
// tags of the result types. Its shape:
//
//	{
//	  "params": [Param],          every scenario key, as sim params --json lists them,
//	                              with "enum_type" naming the vocabulary type of an enum key
//	  "enums":  {"Reuse": ["none", …], "Side": […], "Kind": […], …},
//	                              every vocabulary type and its values, in order
//	  "phases": [Phase],          a call's times in order (queue, then curl's five)
//	  "types":  {"Event": [Field], "Summary": [Field], "Stat": [Field], "Sample": [Field], …}
//	  "messages": {"client": [Message], "server": [Message]}
//	                              the run protocol's messages: each its "type" and its entry of types
//	}
//
// A Field is {"name", "type", "unit", "enum", "nullable", "optional",
// "kinds"}: type is integer, number, boolean, string, any (a value of any
// JSON type), the name of another entry of types, or one of these followed
// by "[]" for a list or "{}" for an object whose keys are names (a chain's
// hops and tiers).
type Schema struct {
	Params []SchemaParam       `json:"params"`
	Enums  map[string][]string `json:"enums"`
	Phases []Phase             `json:"phases"`
	Types  map[string][]Field  `json:"types"`
	// Messages are the run protocol's messages (sim/server/PROTOCOL.md)
	// by direction, "client" and "server": each its "type" literal and the
	// entry of Types that holds its fields.
	Messages map[string][]Message `json:"messages,omitempty"`

	extra map[reflect.Type]string // enum types added by AddEnum, by Go type
}

// A Message is one message of the run protocol.
type Message struct {
	Type string `json:"type"` // the value of its "type" key
	Of   string `json:"of"`   // its entry of Types
}

// AddEnum adds a closed set of words declared outside package sim (a run's
// mode, an exercise's kind) to s: its values, and the type of every field
// of that Go type that AddType describes later.
func AddEnum[T ~string](s *Schema, values []T) {
	t := reflect.TypeFor[T]()
	if _, ok := s.Enums[t.Name()]; ok {
		panic("sim: the schema has an enum named " + t.Name() + " already")
	}
	for _, v := range values {
		s.Enums[t.Name()] = append(s.Enums[t.Name()], string(v))
	}
	if s.extra == nil {
		s.extra = map[reflect.Type]string{}
	}
	s.extra[t] = t.Name()
}

// AddType describes struct type t under its Go name, and every struct type
// its fields hold that s does not describe yet.
func (s *Schema) AddType(t reflect.Type) {
	if _, ok := s.Types[t.Name()]; ok {
		return
	}
	s.Types[t.Name()] = jsonFields(t, s.extra)
	for i := 0; i < t.NumField(); i++ {
		ft := t.Field(i).Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != durationType && ft.Name() != "" && !t.Field(i).Anonymous {
			s.AddType(ft)
		}
	}
}

// AddMessage describes message type t (see AddType) as the message of
// direction dir ("client" or "server") whose "type" is typ.
func (s *Schema) AddMessage(dir, typ string, t reflect.Type) {
	s.AddType(t)
	if s.Messages == nil {
		s.Messages = map[string][]Message{}
	}
	s.Messages[dir] = append(s.Messages[dir], Message{Type: typ, Of: t.Name()})
}

// SchemaParam is a Param with the vocabulary type of its values.
type SchemaParam struct {
	Param
	EnumType string `json:"enum_type,omitempty"`
}

// A Field is one key of a JSON object the simulator writes.
type Field struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Unit     string   `json:"unit,omitempty"`     // ms, s, req/s, % (a Stat is in the unit of the key that holds it)
	Enum     string   `json:"enum,omitempty"`     // the vocabulary type of its values
	Nullable bool     `json:"nullable,omitempty"` // may be null
	Optional bool     `json:"optional,omitempty"` // may be left out, meaning zero
	Kinds    []string `json:"kinds,omitempty"`    // events: the kinds that carry it (all when empty)
}

// NewSchema builds the schema of this version of the package.
func NewSchema() Schema {
	s := Schema{Enums: Enums(), Phases: Phases(), Types: map[string][]Field{}}
	t := reflect.TypeFor[Scenario]()
	for _, p := range Params() {
		sp := SchemaParam{Param: p}
		if p.Kind == "enum" {
			e, _ := enumFor(t.Field(p.index))
			sp.EnumType = e.name
		}
		s.Params = append(s.Params, sp)
	}
	s.Types["Event"] = append(JSONFields(reflect.TypeFor[Event]()), eventExtra...)
	for _, v := range []any{Summary{}, Stat{}, Sample{}, HopSummary{}, TierSummary{}, HopSample{}} {
		t := reflect.TypeOf(v)
		s.Types[t.Name()] = JSONFields(t)
	}
	return s
}

// JSONFields describes the JSON keys of struct type t from its fields' json
// tags (and kinds and enum tags). A unit is read from the key's suffix:
// _ms, _s, _rps or _pct; a time.Duration field's key must end in _ms.
func JSONFields(t reflect.Type) []Field { return jsonFields(t, nil) }

// jsonFields is JSONFields, with the enum types of extra besides the
// vocabulary's.
func jsonFields(t reflect.Type, extra map[reflect.Type]string) []Field {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if et := f.Type; f.Anonymous && f.Tag.Get("json") == "" {
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, jsonFields(et, extra)...) // encoding/json lifts its fields
				continue
			}
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		fd := Field{Name: name, Optional: strings.Contains(f.Tag.Get("json"), ",omitempty")}
		if k := f.Tag.Get("kinds"); k != "" {
			fd.Kinds = strings.Split(k, ",")
		}
		switch {
		case strings.HasSuffix(name, "_ms"):
			fd.Unit = "ms"
		case strings.HasSuffix(name, "_s"):
			fd.Unit = "s"
		case strings.HasSuffix(name, "_rps"):
			fd.Unit = "req/s"
		case strings.HasSuffix(name, "_pct"):
			fd.Unit = "%"
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			fd.Nullable, ft = true, ft.Elem()
		}
		// Lists and objects keyed by name (a chain's hops and tiers), at
		// any depth: map[string][]T is "T[]{}", read from the inside out.
		list := ""
		for !isRawJSON(ft) && (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map) {
			if ft.Kind() == reflect.Slice {
				list = "[]" + list
			} else {
				list = "{}" + list
			}
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if e, ok := enumFor(reflect.StructField{Type: ft, Tag: f.Tag}); ok {
			fd.Type, fd.Enum = "string", e.name
		} else if name, ok := extra[ft]; ok {
			fd.Type, fd.Enum = "string", name
		} else {
			fd.Type = jsonType(ft)
		}
		if ft == durationType && fd.Unit != "ms" {
			panic("sim: " + t.Name() + "." + f.Name + " is a duration: its JSON key must end in _ms")
		}
		fd.Type += list
		out = append(out, fd)
	}
	return out
}

// isRawJSON: t is encoding/json's RawMessage (named, not imported: package
// sim is linked into the page's .wasm, which links no encoding/json).
func isRawJSON(t reflect.Type) bool {
	return t.PkgPath() == "encoding/json" && t.Name() == "RawMessage"
}

func jsonType(t reflect.Type) string {
	switch {
	case t == durationType:
		return "number"
	case t.Kind() == reflect.Struct:
		return t.Name()
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Interface || isRawJSON(t):
		return "any" // any JSON value (a RawMessage is decoded later)
	}
	return t.Kind().String()
}

// jsonName is the key encoding/json writes for f ("" for none).
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	if name, _, _ := strings.Cut(tag, ","); name != "" {
		return name
	}
	return f.Name
}
