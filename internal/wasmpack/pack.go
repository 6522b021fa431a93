// Package wasmpack rewrites the data section of a WebAssembly module so
// that it compresses better. Go's linker writes a new data segment after
// every run of more than 8 zero bytes, which makes the module's raw size
// small, but the page's model had tens of thousands of segments, whose
// headers (an offset and a length each) compress far worse than the
// zeros they skip.
// Pack merges segments whose gap is at most a given number of bytes,
// writing the gap as zeros. Memory starts zeroed, so the module's memory at
// start is the same byte for byte (Image shows it).
package wasmpack

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// DefaultGap is the largest run of zeros Pack writes out: gaps of up to 64
// bytes already give nearly all of the gain.
const DefaultGap = 64

const dataSection = 11

// A segment is an active data segment of memory 0: bytes at an offset.
type segment struct {
	off  uint32
	data []byte
}

// Pack returns the module with its data segments sorted by offset and every
// two neighbours at most gap bytes apart merged into one (up to MaxZeros
// bytes of zeros in all). A module without a
// data section comes back as it is. Pack refuses a malformed module, and a
// data section it cannot rewrite to the same memory (passive segments,
// another memory, an offset that is not a constant, overlapping segments),
// naming what it found.
func Pack(module []byte, gap int) ([]byte, error) {
	secs, err := sections(module)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(module[:8])
	for _, s := range secs {
		if s.id != dataSection {
			out.Write(s.raw)
			continue
		}
		segs, err := readData(s.body)
		if err != nil {
			return nil, err
		}
		body := writeData(merge(segs, gap))
		out.WriteByte(dataSection)
		out.Write(binary.AppendUvarint(nil, uint64(len(body))))
		out.Write(body)
	}
	return out.Bytes(), nil
}

// Image is the memory the module's data segments write at start, up to the
// end of the last one, and the number of segments.
func Image(module []byte) ([]byte, int, error) {
	secs, err := sections(module)
	if err != nil {
		return nil, 0, err
	}
	var mem []byte
	n := 0
	for _, s := range secs {
		if s.id != dataSection {
			continue
		}
		segs, err := readData(s.body)
		if err != nil {
			return nil, 0, err
		}
		for _, sg := range segs {
			end := int(sg.off) + len(sg.data)
			if end > len(mem) {
				mem = append(mem, make([]byte, end-len(mem))...)
			}
			copy(mem[sg.off:], sg.data)
		}
		n += len(segs)
	}
	return mem, n, nil
}

type section struct {
	id   byte
	body []byte
	raw  []byte // id, size and body as read
}

func sections(m []byte) ([]section, error) {
	if len(m) < 8 || !bytes.Equal(m[:4], []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly module (no \\0asm header)")
	}
	if v := binary.LittleEndian.Uint32(m[4:8]); v != 1 {
		return nil, fmt.Errorf("WebAssembly version %d; want 1", v)
	}
	var out []section
	for i := 8; i < len(m); {
		start := i
		id := m[i]
		i++
		size, n := binary.Uvarint(m[i:])
		if n <= 0 || size > uint64(len(m)-i-n) {
			return nil, fmt.Errorf("section %d at byte %d: bad size", id, start)
		}
		i += n
		end := i + int(size)
		out = append(out, section{id: id, body: m[i:end], raw: m[start:end]})
		i = end
	}
	return out, nil
}

func readData(b []byte) ([]segment, error) {
	r := reader{b: b}
	count := r.uleb()
	if r.err == nil && count > uint64(len(b)) {
		r.fail("a count of %d segments in %d bytes", count, len(b))
	}
	segs := make([]segment, 0, min(count, 1<<20))
	for k := uint64(0); k < count && r.err == nil; k++ {
		if flag := r.byte(); flag != 0 && r.err == nil {
			r.fail("segment %d: kind %d; only active segments of memory 0 can be merged", k, flag)
		}
		if op := r.byte(); op != 0x41 && r.err == nil { // i32.const
			r.fail("segment %d: its offset is not an i32.const", k)
		}
		off := r.sleb32()
		if end := r.byte(); end != 0x0b && r.err == nil {
			r.fail("segment %d: its offset expression does not end", k)
		}
		n := r.uleb()
		data := r.bytes(n)
		if r.err == nil && (off < 0 || uint64(off)+n > 1<<32) {
			r.fail("segment %d: offset %d and %d bytes lie outside 32-bit memory", k, off, n)
		}
		segs = append(segs, segment{off: uint32(off), data: data})
	}
	if r.err == nil && r.i != len(b) {
		r.fail("%d bytes after the last segment", len(b)-r.i)
	}
	if r.err != nil {
		return nil, fmt.Errorf("data section: %w", r.err)
	}
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.off, b.off) })
	for k := 1; k < len(segs); k++ {
		if prev := segs[k-1]; uint64(segs[k].off) < uint64(prev.off)+uint64(len(prev.data)) {
			return nil, fmt.Errorf("data section: segments at %d and %d overlap", prev.off, segs[k].off)
		}
	}
	return segs, nil
}

// MaxZeros bounds the zeros Pack writes into one module, so that a module
// of far-apart segments cannot make it allocate gigabytes.
const MaxZeros = 64 << 20

// merge joins sorted segments less than gap+1 bytes apart.
func merge(segs []segment, gap int) []segment {
	var out []segment
	zeros := uint64(0)
	for _, s := range segs {
		if n := len(out); n > 0 && gap >= 0 {
			last := &out[n-1]
			end := uint64(last.off) + uint64(len(last.data))
			if d := uint64(s.off) - end; d <= uint64(gap) && zeros+d <= MaxZeros {
				zeros += d
				last.data = append(last.data, make([]byte, d)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		out = append(out, segment{off: s.off, data: slices.Clone(s.data)})
	}
	return out
}

func writeData(segs []segment) []byte {
	b := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		b = append(b, 0, 0x41)
		b = appendSleb(b, int64(int32(s.off)))
		b = append(b, 0x0b)
		b = binary.AppendUvarint(b, uint64(len(s.data)))
		b = append(b, s.data...)
	}
	return b
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// reader reads a section's body, keeping the first error.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.i >= len(r.b) {
		r.fail("ends early at byte %d", r.i)
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *reader) uleb() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		r.fail("bad number at byte %d", r.i)
		return 0
	}
	r.i += n
	return v
}

// sleb32 reads a signed LEB128 number of at most 5 bytes (an i32).
func (r *reader) sleb32() int64 {
	var v int64
	var shift uint
	for k := 0; ; k++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if k == 5 {
			r.fail("an i32 of more than 5 bytes at byte %d", r.i)
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v |= -1 << shift
			}
			return int64(int32(v))
		}
	}
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.i) {
		r.fail("a segment of %d bytes with %d left", n, len(r.b)-r.i)
		return nil
	}
	r.i += int(n)
	return r.b[r.i-int(n) : r.i]
}
