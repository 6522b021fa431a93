//go:build !nolabparse

package lab

// Reading a lab from its source: the Markdown file, its front matter and
// its fenced blocks. Not in a nolabparse build (see the package doc).

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/pelletier/go-toml/v2"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// ReadFile parses the lab at path; a .toml file is read as a lab of one
// block whose id is the file's base name.
func ReadFile(path string) (*Lab, error) {
	return ReadFileContext(context.Background(), path)
}

// ReadFileContext is ReadFile that stops between blocks, with ctx's error,
// once ctx is done.
func ReadFileContext(ctx context.Context, path string) (*Lab, error) {
	src, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".toml") {
		return ParseScenarioFile(path, src)
	}
	return ParseContext(ctx, path, src)
}

// ParseScenarioFile reads a bare TOML scenario as a lab with one block.
func ParseScenarioFile(path string, src []byte) (*Lab, error) {
	if len(src) > MaxFileBytes {
		return nil, tooLarge(path)
	}
	id := strings.TrimSuffix(path[strings.LastIndexAny(path, `/\`)+1:], ".toml")
	b, err := parseBlock(path, id, 1, src)
	if err != nil {
		return nil, err
	}
	if err := bindExpects([]*Block{b}); err != nil {
		return nil, err
	}
	return &Lab{File: path, Title: b.Title, Blocks: []*Block{b}}, nil
}

// Parse reads a lab from Markdown source; file names it in errors. A
// source larger than MaxFileBytes, or nested deeper than MaxNesting, is an
// error.
func Parse(file string, src []byte) (*Lab, error) {
	return ParseContext(context.Background(), file, src)
}

// ParseContext is Parse that stops between blocks, with ctx's error, once
// ctx is done.
func ParseContext(ctx context.Context, file string, src []byte) (*Lab, error) {
	if err := checkSize(file, src); err != nil {
		return nil, err
	}
	l := &Lab{File: file}
	body, bodyLine, fm, err := splitFrontMatter(src)
	if err != nil {
		return nil, &Error{File: file, Line: 1, Msg: err.Error()}
	}
	if fm != nil {
		var meta struct {
			Title   string `toml:"title"`
			Scripts string `toml:"scripts"`
		}
		if err := toml.Unmarshal(fm, &meta); err != nil {
			return nil, &Error{File: file, Line: 1 + tomlLine(err), Msg: "front matter: " + tomlMsg(err)}
		}
		l.Title = meta.Title
		if meta.Scripts != "" {
			if !scriptsRE.MatchString(meta.Scripts) {
				line := 1
				if m := scriptsKeyRE.FindIndex(fm); m != nil {
					line = 2 + bytes.Count(fm[:m[0]], []byte("\n"))
				}
				return nil, &Error{File: file, Line: line,
					Msg: msgf.Sprintf("front matter: scripts = %q: want the name of a folder next to the lab (letters, digits, - and _), e.g. \"php-persistent-share\"", meta.Scripts)}
			}
			l.Scripts = filepath.Join(filepath.Dir(file), meta.Scripts)
		}
	}
	lineOf := lineIndex(src)
	offset := len(src) - len(body)
	doc := goldmark.New().Parser().Parse(text.NewReader(body))
	seen := map[string]int{}
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		fc, ok := n.(*ast.FencedCodeBlock)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		if err := ctx.Err(); err != nil {
			return ast.WalkStop, err
		}
		lang := string(fc.Language(body))
		if lang != "sim" && lang != "exercise" {
			return ast.WalkSkipChildren, nil
		}
		var code bytes.Buffer
		start := -1
		for i := 0; i < fc.Lines().Len(); i++ {
			seg := fc.Lines().At(i)
			if start < 0 {
				start = seg.Start
			}
			code.Write(seg.Value(body))
		}
		fenceLine := bodyLine
		if fc.Info != nil {
			fenceLine = lineOf(offset + fc.Info.Segment.Start)
		}
		line := fenceLine + 1
		if start >= 0 {
			line = lineOf(offset + start)
		}
		attrs, err := fenceAttrs(fc, body)
		if err != nil {
			return ast.WalkStop, &Error{File: file, Line: fenceLine, Msg: err.Error()}
		}
		f := &Fence{Lang: lang, Attrs: attrs, Body: code.String(), Line: line}
		l.Fences = append(l.Fences, f)
		if lang != "sim" {
			return ast.WalkSkipChildren, nil
		}
		id := attrs["id"]
		if id == "" {
			return ast.WalkStop, &Error{File: file, Line: fenceLine, Msg: "a ```sim block needs an id: ```sim {id=\"name\"}"}
		}
		if prev, dup := seen[id]; dup {
			return ast.WalkStop, &Error{File: file, Line: fenceLine, Block: id, Msg: msgf.Sprintf("id used twice (first at line %d)", prev)}
		}
		seen[id] = fenceLine
		b, err := parseBlock(file, id, line, code.Bytes())
		if err != nil {
			return ast.WalkStop, err
		}
		b.FenceLine = fenceLine
		l.Blocks = append(l.Blocks, b)
		return ast.WalkSkipChildren, nil
	})
	if err != nil {
		return nil, err
	}
	if err := bindExpects(l.Blocks); err != nil {
		return nil, err
	}
	for _, b := range l.Blocks {
		b.Scripts = l.Scripts
	}
	return l, nil
}

// scriptsRE is a folder name for the front matter's scripts key.
var (
	scriptsRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)
	scriptsKeyRE = regexp.MustCompile(`(?m)^[ \t]*scripts[ \t]*=`)
)

// fenceAttrs reads the {key="value"} part of a fence's info string the way
// Hugo does.
func fenceAttrs(fc *ast.FencedCodeBlock, src []byte) (map[string]string, error) {
	out := map[string]string{}
	if fc.Info == nil {
		return out, nil
	}
	info := fc.Info.Segment.Value(src)
	i := bytes.IndexByte(info, '{')
	if i < 0 {
		return out, nil
	}
	j := bytes.IndexByte(info[i:], '}')
	if j < 0 {
		return nil, errors.New("unclosed { in the fence's attributes")
	}
	attrs, ok := parser.ParseAttributes(text.NewReader(info[i : i+j+1]))
	if !ok {
		return nil, msgf.Errorf("cannot read the fence's attributes %s; quote the values: {id=\"name\"}", info[i:i+j+1])
	}
	for _, a := range attrs {
		switch v := a.Value.(type) {
		case []byte:
			out[string(a.Name)] = string(v)
		default:
			out[string(a.Name)] = msgf.Sprint(v)
		}
	}
	return out, nil
}

// splitFrontMatter separates TOML front matter (+++ ... +++) from the body
// and returns the body's first line number.
func splitFrontMatter(src []byte) (body []byte, bodyLine int, fm []byte, err error) {
	if !bytes.HasPrefix(src, []byte("+++")) {
		if bytes.HasPrefix(src, []byte("---")) {
			return nil, 0, nil, errors.New("front matter must be TOML (+++), which both Hugo and connlab read")
		}
		return src, 1, nil, nil
	}
	rest := src[3:]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return nil, 0, nil, errors.New("unclosed front matter")
	}
	rest = rest[nl+1:]
	end := bytes.Index(rest, []byte("\n+++"))
	if end < 0 {
		return nil, 0, nil, errors.New("unclosed front matter: no closing +++")
	}
	fm = rest[:end+1]
	after := rest[end+4:]
	if nl := bytes.IndexByte(after, '\n'); nl >= 0 {
		after = after[nl+1:]
	} else {
		after = nil
	}
	bodyLine = 1 + bytes.Count(src[:len(src)-len(after)], []byte("\n"))
	return after, bodyLine, fm, nil
}

// lineIndex returns a function from byte offset to 1-based line.
func lineIndex(src []byte) func(int) int {
	var starts []int
	starts = append(starts, 0)
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return func(off int) int {
		return sort.Search(len(starts), func(i int) bool { return starts[i] > off })
	}
}
