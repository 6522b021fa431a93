//go:build !nolabparse

package lab

import (
	"bytes"
	"io"
	"os"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// Limits on a lab file. The Markdown reader's time grows faster than the
// file with the nesting of lists and block quotes, so a mistaken or hostile
// file could hold `sim run` or `sim serve` for minutes; a lab is one page,
// far below both limits.
const (
	MaxFileBytes = 512 << 10 // bytes of one lab file
	MaxNesting   = 32        // lists and block quotes one line may be inside
)

// readLimited reads at most MaxFileBytes of the file at path, and fails,
// naming the file, when it is larger.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(src) > MaxFileBytes {
		return nil, tooLarge(path)
	}
	return src, nil
}

func tooLarge(file string) error {
	return &Error{File: file, Msg: msgf.Sprintf("larger than %d bytes: a lab is one page; split it", MaxFileBytes)}
}

// checkSize refuses a lab the reader would take too long over: too large, or
// a line nested too deep.
func checkSize(file string, src []byte) error {
	if len(src) > MaxFileBytes {
		return tooLarge(file)
	}
	line := 1
	for rest := src; len(rest) > 0; line++ {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if d := nesting(l); d > MaxNesting {
			return &Error{File: file, Line: line, Msg: msgf.Sprintf("nested about %d deep in lists and block quotes; at most %d", d, MaxNesting)}
		}
	}
	return nil
}

// nesting estimates how many lists and block quotes a line is inside: the
// markers that start it (>, -, *, +, 1. or 1)), plus its indentation in
// steps of two columns, the least a list item's content is indented. A line
// without a marker opens nothing and counts 0.
func nesting(line []byte) int {
	markers, ws, col := 0, 0, 0
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ':
			ws, col, i = ws+1, col+1, i+1
		case c == '\t':
			n := 4 - col%4
			ws, col, i = ws+n, col+n, i+1
		case c == '>':
			markers, col, i = markers+1, col+1, i+1
		case (c == '-' || c == '*' || c == '+') && blankAt(line, i+1):
			markers, col, i = markers+1, col+1, i+1
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j == len(line) || (line[j] != '.' && line[j] != ')') || !blankAt(line, j+1) {
				i = len(line)
				continue
			}
			markers, col, i = markers+1, col+j+1-i, j+1
		default:
			i = len(line)
		}
	}
	if markers == 0 {
		return 0
	}
	return markers + ws/2
}

// blankAt reports whether line ends at i or has a space or tab there.
func blankAt(line []byte, i int) bool {
	return i >= len(line) || line[i] == ' ' || line[i] == '\t' || line[i] == '\r'
}
