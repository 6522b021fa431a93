package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

// The messages of PROTOCOL.md are declared in runsvc. Client messages
// are decoded into a runsvc.Run (a cancel's fields are a run's); server
// messages are encoded from runsvc's types, except event batches, which the
// stream builds byte by byte (see stream.go).

// encode marshals a server message. runsvc's types cannot fail to encode;
// a failure would be a bug, reported as an error message.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return errorMsg("", "", "internal error: "+err.Error())
	}
	return b
}

// Bounds of what an error echoes: an id longer than runsvc.MaxID is not
// echoed (the page cannot have sent it: runs refuse such ids), a field
// name or a message is clipped. An error reply is at most a few hundred
// bytes, whatever the client sent.
const (
	maxField   = 64
	maxMessage = 512
)

func errorMsg(id, field, msg string) []byte {
	if len(id) > runsvc.MaxID {
		id = ""
	}
	b, _ := json.Marshal(runsvc.Error{Type: "error", ID: id, Field: lab.Clip(field, maxField), Message: lab.Clip(msg, maxMessage)})
	return b
}

// errorOf is the error message of run id that err refused or stopped
// (runsvc.ErrorOf), bounded as errorMsg bounds it.
func errorOf(id string, err error) []byte {
	e := runsvc.ErrorOf(id, err)
	return errorMsg(e.ID, e.Field, e.Message)
}

// decode reads one client message; on error it returns the error reply
// instead, naming the field at fault. Numbers in params stay json.Numbers
// (jsonNumbers turns them into float64s), so that one a float64 cannot
// hold names its key.
func decode(data []byte) (*runsvc.Run, []byte) {
	var m runsvc.Run
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	err := dec.Decode(&m)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("want one JSON object per message")
		}
	}
	if err != nil {
		// Echo the id when it can be read, so the page knows which run.
		var idOnly struct {
			ID any `json:"id"`
		}
		json.Unmarshal(data, &idOnly)
		id, _ := idOnly.ID.(string)
		field, msg := jsonError(err)
		return nil, errorMsg(id, field, msg)
	}
	if len(m.ID) > runsvc.MaxID {
		return nil, errorMsg("", "id", fmt.Sprintf("id is %d bytes long; at most %d", len(m.ID), runsvc.MaxID))
	}
	switch m.Type {
	case "run", "cancel":
		return &m, nil
	case "":
		return nil, errorMsg(m.ID, "type", `a message needs a "type": "run" or "cancel"`)
	}
	return nil, errorMsg(m.ID, "type", fmt.Sprintf(`unknown message type %q: want "run" or "cancel"`, lab.Clip(m.Type, 32)))
}

// jsonNumbers gives a run's params (decoded with json.Decoder.UseNumber)
// the float64s encoding/json gives an `any`; a number a float64 cannot
// hold is refused as encoding/json refuses it, naming its key, the first
// in key order.
func jsonNumbers(params map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(params))
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v, err := floats(params[k])
		if err != nil {
			return nil, &runsvc.FieldError{Field: k, Msg: fmt.Sprintf("%s: %v", k, err)}
		}
		out[k] = v
	}
	return out, nil
}

// floats replaces the json.Numbers in v with float64s, in place.
func floats(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, &json.UnmarshalTypeError{Value: "number " + string(x), Type: reflect.TypeFor[float64]()}
		}
		return f, nil
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			f, err := floats(x[k])
			if err != nil {
				return nil, err
			}
			x[k] = f
		}
	case []any:
		for i := range x {
			f, err := floats(x[i])
			if err != nil {
				return nil, err
			}
			x[i] = f
		}
	}
	return v, nil
}

// jsonError names the field of a decoding error.
func jsonError(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return "", fmt.Sprintf("want a JSON object, got %s", te.Value)
	case errors.As(err, &te):
		field = lab.Clip(te.Field, maxField)
		want := te.Type.String()
		switch te.Type.String() {
		case "uint64", "*uint64":
			want = "a whole number ≥ 0"
		case "string":
			want = "a string"
		case "[]string":
			want = "a list of strings"
		case "map[string]interface {}":
			want = "an object of scenario keys"
		}
		return field, fmt.Sprintf("%s: want %s, got %s", field, want, te.Value)
	case errors.As(err, &se):
		return "", fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := lab.Clip(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), maxField)
		return f, fmt.Sprintf("unknown field %q (PROTOCOL.md lists the fields of each message)", f)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "", "malformed JSON: the message ends early"
	case errors.Is(err, io.EOF):
		return "", "empty message: want a JSON object"
	}
	return "", "malformed message: " + err.Error()
}

// droppedMsg is the runsvc.Dropped message, built as the batches are, its
// id as sim.AppendJSONString writes it.
func droppedMsg(id string, count int) []byte {
	b := append([]byte(`{"type":"dropped","id":`), sim.AppendJSONString(nil, id)...)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(count), 10)
	return append(b, '}')
}
