// Package lab reads connlab's labs: Markdown files whose fenced ```sim
// blocks (TOML, with Hugo-style attributes such as {id="idle"}) hold the
// scenarios, their variants and the expectations the page's prose states.
//
// The same file is rendered by Hugo, run by `sim run`, and checked by `go
// test`, so the page, the command line and the tests cannot disagree.
// Attributes are read with goldmark's parser.ParseAttributes, the call Hugo
// itself uses, so both readers see the same ids.
//
// A lab is read once from its source (Parse, ReadFile: Markdown and TOML)
// and may then travel as data: Lab.Data is the lab as read, which `sim lab
// --json` prints for the site, and FromData makes a Lab of it again without
// reading any Markdown or TOML. Built with the tag nolabparse, the package
// has no reader of sources at all, only FromData: the WebAssembly model of
// the pages (sim/cmd/simwasm) is built so, a third of its size smaller.
package lab

import (
	"sort"
	"strconv"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// Lab is one parsed lab file.
type Lab struct {
	File   string
	Title  string
	Blocks []*Block
	// Scripts is the folder of the lab's own code when its front matter
	// names one (scripts = "php-persistent-share": a lab that runs another
	// lab's scripts); empty, the folder named after the lab (ScriptDir).
	Scripts string
	// Fences lists every fenced block of a connlab language in the file
	// (sim, exercise) in order, for readers that handle the other kinds.
	Fences []*Fence

	// exercises are the lab's exercises when it was made from its data
	// (FromData) rather than read from its source.
	exercises []*Exercise
	fromData  bool
}

// A Fence is one fenced code block of a connlab language.
type Fence struct {
	Lang  string
	Attrs map[string]string
	Body  string
	Line  int // line of the body's first line in the file
}

// Error is a problem in a lab file, with its position.
type Error struct {
	File  string
	Line  int
	Block string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Block != "" {
		b.WriteString("block " + strconv.Quote(e.Block) + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Block returns the block with the given id, or an error listing the ids.
func (l *Lab) Block(id string) (*Block, error) {
	ids := make([]string, 0, len(l.Blocks))
	for _, b := range l.Blocks {
		if b.ID == id {
			return b, nil
		}
		ids = append(ids, b.ID)
	}
	sort.Strings(ids)
	return nil, &Error{File: l.File, Msg: msgf.Sprintf("no block with id %q (blocks: %s)", id, strings.Join(ids, ", "))}
}
