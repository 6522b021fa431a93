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

var (
	linkBlockRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	linkKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// ParseLink reads a page link. block picks one block when the link holds
// several ("" otherwise); files are looked for under root.
func ParseLink(link, block, root string) (*LinkState, error) {
	u, err := url.Parse(link)
	if err != nil {
		return nil, fmt.Errorf("link %q: %v", link, err)
	}
	file, err := linkFile(u.Path, root)
	if err != nil {
		return nil, err
	}
	states, order, err := parseLinkQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("link %q: %v", link, err)
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
		return nil, fmt.Errorf("link %q holds no state of block %q (it has %s)", link, block, strings.Join(order, ", "))
	case len(order) == 1:
		return states[order[0]], nil
	case len(order) == 0:
		if frag := strings.TrimPrefix(u.Fragment, "sim-"); frag != u.Fragment && linkBlockRE.MatchString(frag) {
			return &LinkState{File: file, Block: frag, Seed: 1}, nil
		}
		return &LinkState{File: file, Seed: 1}, nil
	}
	return nil, fmt.Errorf("link %q holds the states of %d blocks (%s): add --block", link, len(order), strings.Join(order, ", "))
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
			return nil, nil, fmt.Errorf("%q: %v", part, err)
		}
		b, key, ok := strings.Cut(n, ".")
		if !ok {
			continue // not a block's state (an exercise's ?seed=, say)
		}
		if !linkBlockRE.MatchString(b) || !linkKeyRE.MatchString(key) {
			return nil, nil, fmt.Errorf("%q is not BLOCK.KEY", n)
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
				return nil, nil, fmt.Errorf("%s.seed=%q: want a whole number", b, v)
			}
			continue
		}
		st.Set = append(st.Set, key+"="+v)
	}
	return states, order, nil
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
		return "", fmt.Errorf("link path %q names no page", p)
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
		tried = append(tried, f)
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			return filepath.ToSlash(f), nil
		}
	}
	return "", fmt.Errorf("link path %q: no %s here (run sim in the repository)", p, strings.Join(tried, " or "))
}

// Link writes the link of a block's state on the page of file, under base.
func Link(base, file, block string, set []string, seed uint64) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("--base %q: want the site's http:// or https:// address", base)
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
