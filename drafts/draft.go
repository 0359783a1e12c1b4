package drafts

import (
	"sort"
	"strings"

	"github.com/graft-studio/graft/repo"
)

// Trailers graft writes on draft commits (DESIGN §5, §8).
const (
	// BaseTrailer records one path of a draft's mine set and its base:
	// "Graft-Base: <path> <blob|none>". Every draft commit lists the whole set.
	BaseTrailer = "Graft-Base"
	// ParentTrailer records the branch a branch was created from.
	ParentTrailer = "Graft-Parent"
)

// Entry is one path a draft changed.
type Entry struct {
	// Path is the file's path from the repository root.
	Path string
	// Base is production's blob of the path when the draft first read it
	// ("" = the path did not exist).
	Base string
	// Version is the draft's blob ("" = the draft deletes the path).
	Version string
}

// Draft is one draft branch as its head commit describes it.
type Draft struct {
	// Branch is the draft branch's name.
	Branch string
	// Head is the branch's tip ("" = the draft does not exist yet).
	Head string
	// Parent is the branch the draft was created from (production).
	Parent string
	// Mine are the paths the draft changed, sorted by path: the ones a
	// publish may carry (repo.Config.Publishable), each with the base its
	// Graft-Base trailer records.
	Mine []Entry
	// Foreign are the other paths the head's trailers name (graft.yaml,
	// .github/…: never written by graft, so pushed with plain git), sorted
	// by path. Their trailers' bases are not believed (Base is ""); they are
	// listed as foreign, carried by later draft commits until discarded, and
	// refused by publish.
	Foreign []Entry

	byPath map[string]int
}

// Exists reports whether the draft branch exists.
func (d *Draft) Exists() bool { return d.Head != "" }

// Lookup returns the mine entry of a path.
func (d *Draft) Lookup(path string) (Entry, bool) {
	if d.byPath == nil {
		d.index()
	}
	i, ok := d.byPath[path]
	if !ok {
		return Entry{}, false
	}
	return d.Mine[i], true
}

// entries returns mine and foreign: every path the draft's commits carry.
func (d *Draft) entries() []Entry {
	return append(append([]Entry{}, d.Mine...), d.Foreign...)
}

// foreign returns the foreign entry of a path.
func (d *Draft) foreign(path string) (Entry, bool) {
	for _, e := range d.Foreign {
		if e.Path == path {
			return e, true
		}
	}
	return Entry{}, false
}

// Paths returns the paths of mine, sorted.
func (d *Draft) Paths() []string {
	out := make([]string, len(d.Mine))
	for i, e := range d.Mine {
		out[i] = e.Path
	}
	return out
}

func (d *Draft) index() {
	sort.Slice(d.Mine, func(i, j int) bool { return d.Mine[i].Path < d.Mine[j].Path })
	d.byPath = make(map[string]int, len(d.Mine))
	for i, e := range d.Mine {
		d.byPath[e.Path] = i
	}
}

// trailerBlock returns the last paragraph of a commit message (where Git
// trailers live), or "" when the message is a subject alone.
func trailerBlock(message string) string {
	msg := strings.TrimRight(message, "\n")
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return ""
	}
	return msg[i+2:]
}

// ParseTrailers reads a draft commit message: the mine set as path → base
// ("" = none) from its Graft-Base trailers, and its Graft-Parent.
func ParseTrailers(message string) (bases map[string]string, parent string) {
	bases = map[string]string{}
	for _, line := range strings.Split(trailerBlock(message), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.TrimSpace(key) {
		case BaseTrailer:
			i := strings.LastIndexByte(value, ' ')
			if i <= 0 {
				continue
			}
			path, base := value[:i], value[i+1:]
			if base == "none" {
				base = ""
			}
			bases[path] = base
		case ParentTrailer:
			parent = value
		}
	}
	return bases, parent
}

// Signed returns message with a Graft-By trailer naming author's identity
// (unchanged when it has none): in the message's trailer block when it ends
// with one, else in a block of its own. History reads it back as the
// commit's identity (a commit's author email does not spell one).
func Signed(message string, author repo.Signature) string {
	if author.Identity == "" {
		return message
	}
	msg := strings.TrimRight(message, "\n")
	line := ByTrailer + ": " + author.Identity + "\n"
	if block := trailerBlock(msg); block != "" && isTrailerBlock(block) {
		return msg + "\n" + line
	}
	return msg + "\n\n" + line
}

// isTrailerBlock reports whether every line of a paragraph is a Graft- trailer.
func isTrailerBlock(block string) bool {
	for _, line := range strings.Split(block, "\n") {
		if k, _, ok := strings.Cut(line, ":"); !ok || !strings.HasPrefix(k, "Graft-") {
			return false
		}
	}
	return true
}

// FormatMessage appends the trailers of a draft commit to a message: the
// parent and one Graft-Base line per mine entry, sorted by path.
func FormatMessage(message, parent string, mine []Entry) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(message, "\n"))
	b.WriteString("\n\n")
	b.WriteString(ParentTrailer + ": " + parent + "\n")
	sorted := append([]Entry(nil), mine...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, e := range sorted {
		base := e.Base
		if base == "" {
			base = "none"
		}
		b.WriteString(BaseTrailer + ": " + e.Path + " " + base + "\n")
	}
	return b.String()
}
