package lab

// Clip shortens s to at most n bytes (on a rune boundary), marking a cut
// with "…": every string a server or a page's model echoes back to a
// client goes through it, so a reply never grows with what the client sent.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	mark := "…"
	if n < len(mark) {
		mark = ""
	}
	cut := max(n-len(mark), 0)
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + mark
}
