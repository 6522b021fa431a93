package sim

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestVocabularyListsEveryConstant: each type's value list holds every
// constant of that type declared in the package, once. (The lists are typed,
// so the compiler already keeps other words out.)
func TestVocabularyListsEveryConstant(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string][]string{} // type → constant names
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			var typ string // an iota block carries its type down
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				switch {
				case vs.Type != nil:
					typ = ""
					if id, ok := vs.Type.(*ast.Ident); ok {
						typ = id.Name
					}
				case len(vs.Values) > 0:
					typ = ""
				}
				for _, n := range vs.Names {
					if typ != "" {
						declared[typ] = append(declared[typ], n.Name)
					}
				}
			}
		}
	}
	for _, e := range enums {
		names := declared[e.name]
		if len(names) == 0 {
			t.Errorf("%s: no constants declared", e.name)
		}
		if len(e.values) != len(names) {
			t.Errorf("%s: %d constants declared (%s), %d listed (%q)", e.name, len(names), strings.Join(names, ", "), len(e.values), e.values)
		}
		seen := map[string]bool{}
		for _, v := range e.values {
			if seen[v] || v == "" {
				t.Errorf("%s: value %q listed twice or empty", e.name, v)
			}
			seen[v] = true
		}
	}
}

// TestParamsTakeTheirEnumsFromTheVocabulary: every enum key lists the values
// of its vocabulary type, in order, and its default is one of them.
func TestParamsTakeTheirEnumsFromTheVocabulary(t *testing.T) {
	all := Enums()
	n := 0
	st := reflect.TypeFor[Scenario]()
	for _, p := range Params() {
		e, ok := enumFor(st.Field(p.index))
		if (p.Kind == "enum") != ok {
			t.Errorf("%s: a %s key, vocabulary type %q", p.Key, p.Kind, e.name)
		}
		if !ok {
			continue
		}
		n++
		if !slices.Equal(p.Enum, all[e.name]) || len(p.Enum) == 0 {
			t.Errorf("%s: enum %q, vocabulary type %s has %q", p.Key, p.Enum, e.name, all[e.name])
		}
		if !slices.Contains(p.Enum, p.Default) {
			t.Errorf("%s: default %q is not one of %q", p.Key, p.Default, p.Enum)
		}
	}
	if n != 10 {
		t.Errorf("%d enum keys, want mode, load, arrival, dispatch, reuse, pool_full, closer, tls, cert, setup", n)
	}
	// Set accepts exactly the listed words.
	var s Scenario = Default()
	if err := s.Set("reuse", string(ReuseUpstreamKeepalive)); err != nil || s.Reuse != ReuseUpstreamKeepalive {
		t.Errorf("set reuse: %v, %q", err, s.Reuse)
	}
	if err := s.Set("reuse", "upstream"); err == nil || !strings.Contains(err.Error(), "none, request, process, pool, upstream-keepalive") {
		t.Errorf("set reuse = upstream: %v", err)
	}
}

// TestErrorKindOf reads the kind back from a model's text, a real run's
// (with its detail in brackets) and PHP's rejection of a share option.
func TestErrorKindOf(t *testing.T) {
	for _, k := range errorKinds {
		for _, text := range []string{string(k), string(k) + " [dial tcp 127.0.0.1:0: connect: cannot assign requested address]"} {
			if got, ok := ErrorKindOf(text); !ok || got != k {
				t.Errorf("ErrorKindOf(%q) = %q, %v", text, got, ok)
			}
		}
	}
	if k, ok := ErrorKindOf("HTTP 502 from nginx"); ok {
		t.Errorf("HTTP 502: kind %q", k)
	}
	for set, want := range map[string]ErrorKind{"": ErrorShareEmpty, "cookie": ErrorShareCookie, "dns,bogus": ErrorShareOption,
		"dns,CURLOPT_URL": ErrorShareOption, "dns,'connect'": ErrorShareType} {
		_, err := ShareMask(splitList(set))
		if err == nil {
			t.Fatalf("%q accepted", set)
		}
		if got, _ := ErrorKindOf(err.Msg); got != want {
			t.Errorf("ShareMask(%q): %q, kind %q, want %q", set, err.Msg, got, want)
		}
	}
	// PHP 8.5.10's own words (labs/php-persistent-share/identity.php ran
	// them; the lab's record holds what it printed).
	for set, want := range map[string]string{
		"dns,CURLOPT_URL": "ValueError: curl_share_init_persistent(): Argument #1 ($share_options) must contain only CURL_LOCK_DATA_* constants",
		"dns,'connect'":   "TypeError: curl_share_init_persistent(): Argument #1 ($share_options) must contain only int values, string given",
	} {
		if _, err := ShareMask(splitList(set)); err == nil || err.Msg != want {
			t.Errorf("ShareMask(%q) = %v, want %q", set, err, want)
		}
	}
}

// TestValidateRejectsAWordOutsideTheVocabulary: a Scenario built in Go
// (not through Set) with a word no type lists is refused, naming the key.
func TestValidateRejectsAWordOutsideTheVocabulary(t *testing.T) {
	s := Default()
	s.Reuse = "connection"
	err := s.Validate()
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Key != "reuse" || !strings.Contains(err.Error(), `"connection"`) {
		t.Errorf("reuse = connection: %v", err)
	}
	s = Default()
	s.TLS = "1.4"
	if err := s.Validate(); err == nil || !strings.HasPrefix(err.Error(), "tls: ") {
		t.Errorf("tls = 1.4: %v", err)
	}
}

// TestEveryReusePolicyIsModelled: each reuse policy has its own behaviour
// in the model; a policy added to the vocabulary alone would run as
// another one.
func TestEveryReusePolicyIsModelled(t *testing.T) {
	seen := map[policy]Reuse{}
	for _, r := range reuses {
		p := policyOf(r)
		if other, dup := seen[p]; dup {
			t.Errorf("reuse %q runs as %q: give it a policy in policyOf (pool.go)", r, other)
		}
		seen[p] = r
	}
}

// TestPolicyIsReuse: the engine's policies are the reuse values in order,
// so that a Reuse is declared once.
func TestPolicyIsReuse(t *testing.T) {
	want := map[policy]Reuse{polNone: ReuseNone, polRequest: ReuseRequest, polProcess: ReuseProcess, polPool: ReusePool, polUpstream: ReuseUpstreamKeepalive}
	if len(want) != len(reuses) {
		t.Fatalf("%d policies for %d reuse values", len(want), len(reuses))
	}
	for p, r := range want {
		if got := policyOf(r); got != p {
			t.Errorf("policyOf(%q) = %d, want %d", r, got, p)
		}
		if reuseMeaning[r] == "" {
			t.Errorf("reuse %q: no meaning for the key's help", r)
		}
	}
}
