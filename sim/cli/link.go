package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/connlab/connlab/sim/lab"
)

// A link to a lab page holds runs' states (site/assets/ts/sim/link.ts
// writes them): for each block, one query parameter per changed scenario
// key and its seed, named after the block,
//
//	http://127.0.0.1:8080/labs/idle-timeouts/?idle.pause=60s&idle.seed=3#sim-idle
//
// `sim run LINK` runs that state: the page's file is found from the path
// (labs/NAME.md, content/NAME.md; /ko/ pages read NAME.ko.md when it
// exists), and `sim run --link` prints the link of a command's state.

// DefaultLinkBase is where `make serve` serves the site.
const DefaultLinkBase = "http://127.0.0.1:8080/"

// linkFlags are run's flags for links.
type linkFlags struct {
	print *bool
	base  *string
}

func addLinkFlags(fs *flag.FlagSet) linkFlags {
	return linkFlags{
		print: fs.Bool("link", false, "print the link to the page that restores this state (--block, --set, --seed) and runs it, instead of running"),
		base:  fs.String("base", DefaultLinkBase, "with --link, the site's `URL` (where it is served or published)"),
	}
}

// IsLink reports whether a FILE argument is a page link.
func IsLink(arg string) bool {
	return strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://")
}

// LinkState is what a link holds for one block.
type LinkState struct {
	File  string   // the page's file, e.g. labs/idle-timeouts.md
	Block string   // the block
	Set   []string // key=value, in the link's order
	Seed  uint64
}

// A link is read only up to these sizes: a longer one is refused by its
// size before it is parsed.
const (
	maxLinkBytes  = 64 << 10 // the whole link
	maxLinkParams = 512      // parameters in its query
)

// What an error shows of a link: at most linkShown bytes of it (escaped)
// and of any message that quotes it, and at most namesShown block names.
const (
	linkShown  = 200
	textShown  = 300
	namesShown = 10
)

var (
	linkBlockRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	linkKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// ParseLink reads a page link. block picks one block when the link holds
// several ("" otherwise); files are looked for under root. Its errors
// quote the link escaped and shortened (quoteLink).
func ParseLink(link, block, root string) (*LinkState, error) {
	if len(link) > maxLinkBytes {
		return nil, fmt.Errorf("link %s is %d bytes: sim reads links of at most %d bytes (64 KiB)", quoteLink(link), len(link), maxLinkBytes)
	}
	u, err := url.Parse(link)
	if err != nil {
		// url's own error quotes the whole link again: keep only its reason.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("link %s: %s", quoteLink(link), safeText(err.Error()))
	}
	if n := strings.Count(u.RawQuery, "&") + 1; n > maxLinkParams {
		return nil, fmt.Errorf("link %s: its query has %d parameters: sim reads at most %d", quoteLink(link), n, maxLinkParams)
	}
	file, err := linkFile(u.Path, root)
	if err != nil {
		return nil, err
	}
	states, order, err := parseLinkQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("link %s: %v", quoteLink(link), err)
	}
	for _, st := range states {
		st.File = file
	}
	switch {
	case block != "":
		if st := states[block]; st != nil {
			return st, nil
		}
		if len(order) == 0 {
			return &LinkState{File: file, Block: block, Seed: 1}, nil
		}
		return nil, fmt.Errorf("link %s holds no state of block %s (it has %s)", quoteLink(link), quoteLink(block), nameList(order))
	case len(order) == 1:
		return states[order[0]], nil
	case len(order) == 0:
		if frag := strings.TrimPrefix(u.Fragment, "sim-"); frag != u.Fragment && linkBlockRE.MatchString(frag) {
			return &LinkState{File: file, Block: frag, Seed: 1}, nil
		}
		return &LinkState{File: file, Seed: 1}, nil
	}
	return nil, fmt.Errorf("link %s holds the states of %d blocks (%s): add --block", quoteLink(link), len(order), nameList(order))
}

// parseLinkQuery reads the blocks' states of a link's query, in the order
// the blocks first appear (site/assets/ts/sim/link.ts reads the same).
func parseLinkQuery(raw string) (map[string]*LinkState, []string, error) {
	states := map[string]*LinkState{}
	var order []string
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		name, value, _ := strings.Cut(part, "=")
		n, err1 := url.QueryUnescape(name)
		v, err2 := url.QueryUnescape(value)
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, fmt.Errorf("%s: %s", quoteLink(part), safeText(err.Error()))
		}
		b, key, ok := strings.Cut(n, ".")
		if !ok {
			continue // not a block's state (an exercise's ?seed=, say)
		}
		if !linkBlockRE.MatchString(b) || !linkKeyRE.MatchString(key) {
			return nil, nil, fmt.Errorf("%s is not BLOCK.KEY", quoteLink(n))
		}
		st := states[b]
		if st == nil {
			st = &LinkState{Block: b, Seed: 1}
			states[b] = st
			order = append(order, b)
		}
		if key == "seed" {
			var err error
			if st.Seed, err = strconv.ParseUint(v, 10, 64); err != nil {
				return nil, nil, fmt.Errorf("%s: want a whole number", quoteLink(b+".seed="+v))
			}
			continue
		}
		st.Set = append(st.Set, key+"="+v)
	}
	return states, order, nil
}

// quoteLink quotes a link, or a part of one, for an error: escaped as %q
// does (no control byte reaches the terminal), and at most linkShown bytes
// of it, followed by its length when it is cut.
func quoteLink(s string) string {
	e, cut := escape(s, linkShown, true)
	if cut {
		return `"` + e + `"…(` + strconv.Itoa(len(s)) + " bytes)"
	}
	return `"` + e + `"`
}

// safeText is a message that may hold parts of a link (url's reasons, a
// scenario's refusal of a value) made safe to print: unprintable
// characters escaped as %q does, at most textShown bytes.
func safeText(s string) string {
	e, cut := escape(s, textShown, false)
	if cut {
		return e + "…(" + strconv.Itoa(len(s)) + " bytes)"
	}
	return e
}

// escape escapes s's unprintable characters and invalid bytes as
// strconv.Quote does (and quotes and backslashes too, when inQuotes), up
// to limit bytes of output; cut reports that s did not fit.
func escape(s string, limit int, inQuotes bool) (out string, cut bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		part := s[i : i+size]
		if r == utf8.RuneError && size == 1 || !strconv.IsPrint(r) || inQuotes && (r == '"' || r == '\\') {
			q := strconv.Quote(part)
			part = q[1 : len(q)-1]
		}
		if b.Len()+len(part) > limit {
			return b.String(), true
		}
		b.WriteString(part)
		i += size
	}
	return b.String(), false
}

// nameList lists a link's blocks for an error: the first namesShown
// (each shortened), then how many more.
func nameList(names []string) string {
	var shown []string
	for i, n := range names {
		if i == namesShown {
			return strings.Join(shown, ", ") + " and " + strconv.Itoa(len(names)-namesShown) + " more"
		}
		if e, cut := escape(n, 40, false); cut {
			n = e + "…"
		}
		shown = append(shown, n)
	}
	return strings.Join(shown, ", ")
}

// linkFile finds the lab file of a page path: /labs/NAME/ → labs/NAME.md,
// /NAME/ → content/NAME.md. A translation's page (/ko/labs/NAME/) runs the
// English file, as sim serve and the page's command do (its blocks are the
// same); the translation only when it is alone. A site published under a
// path (/connlab/labs/NAME/) is found by its last parts.
func linkFile(p, root string) (string, error) {
	parts := strings.FieldsFunc(path.Clean(p), func(r rune) bool { return r == '/' })
	if len(parts) > 0 && strings.HasSuffix(parts[len(parts)-1], ".html") {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("link path %s names no page", quoteLink(p))
	}
	name := parts[len(parts)-1]
	lang := ""
	dir := "content"
	if len(parts) >= 2 && parts[len(parts)-2] == "labs" {
		dir = "labs"
		if len(parts) >= 3 {
			lang = parts[len(parts)-3]
		}
	} else if len(parts) >= 2 {
		lang = parts[len(parts)-2]
	}
	var tried []string
	for _, f := range []string{filepath.Join(dir, name+".md"), filepath.Join(dir, name+"."+lang+".md")} {
		if lang == "" && strings.Contains(f, "..md") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			return filepath.ToSlash(f), nil
		}
		if e, cut := escape(f, linkShown/2, false); cut {
			f = e + "…"
		}
		tried = append(tried, f)
	}
	return "", fmt.Errorf("link path %s: no %s here (run sim in the repository)", quoteLink(p), strings.Join(tried, " or "))
}

// Link writes the link of a block's state on the page of file, under base.
func Link(base, file, block string, set []string, seed uint64) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("--base %s: want the site's http:// or https:// address", quoteLink(base))
	}
	// A published site's address has neither a query nor a fragment; the
	// link's own would follow them.
	if i := strings.IndexAny(base, "?#"); i >= 0 {
		what := "a query"
		switch {
		case base[i] == '#':
			what = "a fragment"
		case strings.Contains(base[i:], "#"):
			what = "a query and a fragment"
		}
		return "", fmt.Errorf("--base %s has %s (%s): give the site's address alone", quoteLink(base), what, quoteLink(base[i:]))
	}
	name := strings.TrimSuffix(filepath.Base(file), ".md")
	lang := ""
	if strings.HasSuffix(name, ".ko") {
		name, lang = strings.TrimSuffix(name, ".ko"), "ko/"
	}
	page := lang + name + "/"
	if filepath.Base(filepath.Dir(file)) == "labs" {
		page = lang + "labs/" + name + "/"
	}
	return strings.TrimSuffix(u.String(), "/") + "/" + page + "?" + linkQuery(block, set, seed) + "#sim-" + block, nil
}

// linkQuery is a block's state as a link's query: its settings (key=value),
// then its seed. The page writes the same (site/assets/ts/sim/link.ts).
func linkQuery(block string, set []string, seed uint64) string {
	var q []string
	for _, kv := range set {
		k, v, _ := strings.Cut(kv, "=")
		q = append(q, url.QueryEscape(block+"."+strings.TrimSpace(k))+"="+linkEscape(strings.TrimSpace(v)))
	}
	q = append(q, url.QueryEscape(block+".seed")+"="+strconv.FormatUint(seed, 10))
	return strings.Join(q, "&")
}

// linkEscape escapes a value as the page's encodeURIComponent does, with
// commas, colons and slashes left readable.
func linkEscape(s string) string {
	e := url.QueryEscape(s)
	e = strings.ReplaceAll(e, "+", "%20")
	for _, r := range []string{"%2C,", "%3A:", "%2F/", "%21!", "%2A*", "%27'", "%28(", "%29)"} {
		e = strings.ReplaceAll(e, r[:3], r[3:])
	}
	return e
}

// applyLink: when arg is a page link, its state fills in what the flags
// leave out: the block, the settings (before the flags' own --set, which
// win) and the seed. It returns the file to run.
func applyLink(fs *flag.FlagSet, arg string, block *string, sets *multiFlag, seed *uint64) (string, error) {
	if !IsLink(arg) {
		return arg, nil
	}
	st, err := ParseLink(arg, *block, ".")
	if err != nil {
		return "", err
	}
	// The link's values are checked here, so that a refusal says where the
	// value came from and quotes it safely (a link's bytes are anyone's).
	for _, kv := range st.Set {
		if _, err := lab.ParseSetting(kv); err != nil {
			return "", fmt.Errorf("link, block %s: %s", nameList([]string{st.Block}), safeText(strings.TrimPrefix(err.Error(), "--set ")))
		}
	}
	*block = st.Block
	*sets = append(append(multiFlag{}, st.Set...), (*sets)...)
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if !seedSet {
		*seed = st.Seed
	}
	return st.File, nil
}

// printLink prints the link of a run's state (sim run --link).
func printLink(env *Env, lf linkFlags, file, block string, sets multiFlag, seed uint64) error {
	if !strings.HasSuffix(file, ".md") {
		return usageError{"--link: links open lab pages; " + file + " is not one (.md)"}
	}
	l, err := lab.ReadFile(file)
	if err != nil {
		return err
	}
	if block == "" {
		if len(l.Blocks) != 1 {
			var ids []string
			for _, b := range l.Blocks {
				ids = append(ids, b.ID)
			}
			return usageError{fmt.Sprintf("--link: a link runs one block: add --block (%s has %s)", file, strings.Join(ids, ", "))}
		}
		block = l.Blocks[0].ID
	} else if _, err := l.Block(block); err != nil {
		return err
	}
	if _, err := sets.settings(); err != nil {
		return err
	}
	s, err := Link(*lf.base, filepath.ToSlash(file), block, sets, seed)
	if err != nil {
		return usageError{err.Error()}
	}
	fmt.Fprintln(env.Stdout, s)
	return nil
}
