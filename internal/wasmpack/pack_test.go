package wasmpack

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// module is a WebAssembly module of a custom section and a data section
// with the given raw segment entries.
func module(entries ...[]byte) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	custom := append([]byte{4}, "note"...)
	m = append(m, 0, byte(len(custom)))
	m = append(m, custom...)
	body := binary.AppendUvarint(nil, uint64(len(entries)))
	for _, e := range entries {
		body = append(body, e...)
	}
	m = append(m, dataSection)
	m = binary.AppendUvarint(m, uint64(len(body)))
	return append(m, body...)
}

// active is an active segment of memory 0 at off.
func active(off int64, data string) []byte {
	b := []byte{0, 0x41}
	b = appendSleb(b, off)
	b = append(b, 0x0b)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

func TestPackKeepsMemory(t *testing.T) {
	// Out of order, as Go's linker writes them; gaps of 3, 70 and 1,000.
	in := module(active(2000, "tail"), active(100, "abc"), active(106, "def"), active(179, "ghi"), active(300000, "far"), active(182+1000, "x"))
	for _, c := range []struct{ gap, segments int }{{-1, 6}, {0, 6}, {3, 5}, {64, 5}, {70, 4}, {1000, 2}, {1 << 20, 1}} {
		out, err := Pack(in, c.gap)
		if err != nil {
			t.Fatalf("gap %d: %v", c.gap, err)
		}
		want, _, err := Image(in)
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := Image(out)
		if err != nil {
			t.Fatalf("gap %d: the packed module: %v", c.gap, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("gap %d: memory differs after packing", c.gap)
		}
		if n != c.segments {
			t.Errorf("gap %d: %d segments, want %d", c.gap, n, c.segments)
		}
		if !bytes.Contains(out, []byte("note")) {
			t.Errorf("gap %d: the custom section is gone", c.gap)
		}
	}
}

func TestPackNoData(t *testing.T) {
	in := []byte("\x00asm\x01\x00\x00\x00\x00\x05\x04note")
	out, err := Pack(in, DefaultGap)
	if err != nil || !bytes.Equal(out, in) {
		t.Errorf("a module without data: %q, %v", out, err)
	}
}

func TestPackRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"not wasm", []byte("hello world!"), "not a WebAssembly module"},
		{"version", []byte("\x00asm\x02\x00\x00\x00"), "version 2"},
		{"section size", []byte("\x00asm\x01\x00\x00\x00\x0b\x7f\x00"), "bad size"},
		{"passive", module(active(0, "a"), []byte{1, 1, 'b'}), "segment 1: kind 1"},
		{"global offset", module([]byte{0, 0x23, 0, 0x0b, 1, 'a'}), "not an i32.const"},
		{"no end", module([]byte{0, 0x41, 0, 0x0c, 1, 'a'}), "does not end"},
		{"short", module([]byte{0, 0x41, 0, 0x0b, 9, 'a'}), "a segment of 9 bytes"},
		{"overlap", module(active(10, "abcd"), active(12, "x")), "overlap"},
		{"negative", module(active(-4, "abcd")), "outside 32-bit memory"},
		{"huge count", []byte("\x00asm\x01\x00\x00\x00\x0b\x05\xff\xff\xff\xff\x0f"), "a count of"},
	} {
		_, err := Pack(c.in, DefaultGap)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.want)
		}
	}
	// A data section of one segment and a byte more.
	body := append([]byte{1}, active(0, "a")...)
	body = append(body, 0)
	bad := append([]byte("\x00asm\x01\x00\x00\x00\x0b"), byte(len(body)))
	bad = append(bad, body...)
	if _, err := Pack(bad, DefaultGap); err == nil || !strings.Contains(err.Error(), "1 bytes after the last segment") {
		t.Errorf("a byte after the last segment: %v", err)
	}
}

func FuzzPack(f *testing.F) {
	f.Add(module(active(2000, "tail"), active(100, "abc"), active(106, "def")), 64)
	f.Add(module(active(0, "a"), []byte{1, 1, 'b'}), 0)
	f.Add([]byte("\x00asm\x01\x00\x00\x00"), 8)
	f.Fuzz(func(t *testing.T, in []byte, gap int) {
		out, err := Pack(in, gap)
		if err != nil {
			return
		}
		want, _, err1 := Image(in)
		got, _, err2 := Image(out)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Fatalf("packing changed the memory (%v, %v)", err1, err2)
		}
	})
}

func TestPackBoundsZeros(t *testing.T) {
	// The first gap (48 MiB) is written as zeros, the second would pass
	// MaxZeros.
	in := module(active(0, "a"), active(48<<20, "b"), active(96<<20, "c"))
	out, err := Pack(in, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, _ := Image(out); n != 2 || len(out) > len(in)+MaxZeros {
		t.Errorf("far-apart segments: %d segments in %d bytes; want 2", n, len(out))
	}
}
