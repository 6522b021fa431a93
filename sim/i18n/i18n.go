// Package i18n is the one home of the user interface's words: one TOML file
// per language (en.toml, ko.toml) in Hugo's i18n format. The site reads
// these files as its i18n directory (a mount in site/hugo.toml), and Go
// reads the same files here, embedded, for the terminal's exercise mode
// (sim/cli) and the class pages (sim/class).
//
// A key is a string (key = "…") or, for Hugo's plural forms, a table
// ([key] one = "…" other = "…"), which Go reads as its "other" form. Keys
// are prefixed by the part that shows them: w_ the sim widget, ex_ the
// exercise widget, cli_exercise_ the terminal, class_ the class pages.
// Strings Go formats keep fmt's verbs (%d, %s); Hugo never renders those.
package i18n

import (
	"embed"
	"fmt"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Langs are the languages, English first: the one every other falls back to.
var Langs = []string{"en", "ko"}

//go:embed en.toml ko.toml
var files embed.FS

// tables holds each language's own strings, read once from the embedded
// files; a file that does not parse stops the program at its start (the
// package's tests read it first).
var tables = func() map[string]map[string]string {
	t := map[string]map[string]string{}
	for _, lang := range Langs {
		m, err := parse(lang + ".toml")
		if err != nil {
			panic(err)
		}
		t[lang] = m
	}
	return t
}()

// parse reads one file: strings as they are, a plural table as its "other".
func parse(name string) (map[string]string, error) {
	src, err := files.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := toml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("sim/i18n/%s: %v", name, err)
	}
	out := make(map[string]string, len(doc))
	for k, v := range doc {
		switch x := v.(type) {
		case string:
			out[k] = x
		case map[string]any:
			s, ok := x["other"].(string)
			if !ok {
				return nil, fmt.Errorf("sim/i18n/%s: %s: a table needs an \"other\" string", name, k)
			}
			out[k] = s
		default:
			return nil, fmt.Errorf("sim/i18n/%s: %s: want a string or a table, got %T", name, k, v)
		}
	}
	return out, nil
}

// Lookup returns lang's own string for key, without falling back.
func Lookup(lang, key string) (string, bool) {
	s, ok := tables[lang][key]
	return s, ok
}

// Text returns the string for key in lang, or in English when lang lacks
// it (an unknown lang reads English too), or "" when neither has it.
func Text(lang, key string) string {
	if s, ok := tables[lang][key]; ok {
		return s
	}
	return tables["en"][key]
}

// Keys returns lang's own keys, sorted.
func Keys(lang string) []string {
	keys := make([]string, 0, len(tables[lang]))
	for k := range tables[lang] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Prefixed returns the strings whose key starts with prefix, keyed by the
// rest of the key, in lang with English for what lang lacks: the words a
// page hands its script as one object.
func Prefixed(lang, prefix string) map[string]string {
	out := map[string]string{}
	for _, l := range []string{"en", lang} {
		for k, s := range tables[l] {
			if rest, ok := strings.CutPrefix(k, prefix); ok {
				out[rest] = s
			}
		}
	}
	return out
}
