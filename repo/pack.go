package repo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// Packed objects. A repository cloned, fetched or gc'd by git holds its
// objects in pack files (objects/pack/pack-*.pack, each with a version 2
// .idx index), blobs often stored as deltas against another object of the
// same pack. go-git reads them under r.mu, so every blob read of a compile
// was serialised on one lock. Blobs and trees are read here instead
// (readObjectDirect): an object's index entry found in memory, its
// compressed bytes read with one pread of the pack (kept open), and a delta
// applied to its base, read the same way. An object in no pack listed here,
// a delta whose base is in another pack or a chain deeper than
// packMaxDeltaDepth goes to go-git as before.

// errPackAbsent says that no pack read here holds the object (or its base).
var errPackAbsent = errors.New("not in a pack read directly")

// Pack format constants.
const (
	packObjCommit   = 1
	packObjTree     = 2
	packObjBlob     = 3
	packObjTag      = 4
	packObjOfsDelta = 6
	packObjRefDelta = 7

	packHeaderSize  = 12
	packTrailerSize = 20
	// packMaxEntry bounds the compressed bytes of one entry read at once.
	packMaxEntry = 1 << 30
)

// packMaxDeltaDepth bounds the delta chains read here (git gc writes
// chains of up to 50, --aggressive up to 250 or 4095); go-git reads longer
// ones (a variable for tests).
var packMaxDeltaDepth = 100

var packTypeNames = [...]string{packObjCommit: "commit", packObjTree: "tree", packObjBlob: "blob", packObjTag: "tag"}

// packSet is the packs of one object folder, listed at the first read and
// again (refresh) when an object is found nowhere and the folder changed
// since: git gc or a fetch may have written a pack. Packs are never dropped:
// one that git gc deleted stays open, and readable, until the process ends.
type packSet struct {
	dir   string                      // objects/pack
	packs atomic.Pointer[[]*packFile] // replaced whole, never modified; nil until listed

	mu      sync.Mutex // serialises refreshes
	changed time.Time  // the folder's modification time at the last listing
	names   map[string]bool
}

func newPackSet(objects string) *packSet {
	return &packSet{dir: filepath.Join(objects, "pack"), names: map[string]bool{}}
}

// packFile is one pack and its index, read into memory.
type packFile struct {
	f      *os.File
	size   int64
	fanout [256]uint32
	hashes []byte  // the object names, 20 bytes each, sorted
	offs   []int64 // each object's offset, in the order of hashes
	sorted []int64 // every offset, ascending: an entry ends where the next begins
}

// read reads object h from a pack and returns its content and type name.
// It returns errPackAbsent when no pack read here can give it, and another
// error when the pack is corrupt.
func (s *packSet) read(h plumbing.Hash) ([]byte, string, error) {
	packs := s.packs.Load()
	if packs == nil {
		s.refresh()
		packs = s.packs.Load()
	}
	for _, p := range *packs {
		if i := p.find(h); i >= 0 {
			typ, data, err := p.object(p.offs[i], 0)
			return data, typ, err
		}
	}
	return nil, "", errPackAbsent
}

// refresh loads the indexes of packs not seen before, when the folder
// changed since the last listing, and reports whether there were any.
func (s *packSet) refresh() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.packs.Load() == nil {
		s.packs.Store(&[]*packFile{})
	}
	st, err := os.Stat(s.dir)
	if err != nil || st.ModTime().Equal(s.changed) {
		return false
	}
	s.changed = st.ModTime()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return false
	}
	packs := *s.packs.Load()
	added := false
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "pack-") || !strings.HasSuffix(name, ".idx") || s.names[name] {
			continue
		}
		p, err := openPack(filepath.Join(s.dir, name))
		if errors.Is(err, os.ErrNotExist) {
			s.changed = time.Time{} // the pack is not in place yet: list again next time
			continue
		}
		s.names[name] = true
		if err != nil {
			continue // unreadable: go-git decides
		}
		packs = append(packs[:len(packs):len(packs)], p)
		added = true
	}
	s.packs.Store(&packs)
	return added
}

// openPack opens the pack of an index file and reads the index.
func openPack(idxPath string) (*packFile, error) {
	idx, err := os.ReadFile(idxPath)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(strings.TrimSuffix(idxPath, ".idx") + ".pack")
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		var p *packFile
		if p, err = parsePackIndex(idx, st.Size()); err == nil {
			p.f = f
			return p, nil
		}
	}
	f.Close()
	return nil, err
}

// parsePackIndex reads a version 2 pack index for a pack of packSize bytes.
func parsePackIndex(idx []byte, packSize int64) (*packFile, error) {
	bad := func(why string) (*packFile, error) { return nil, fmt.Errorf("pack index: %s", why) }
	const fanoutAt, namesAt = 8, 8 + 256*4
	if len(idx) < namesAt+2*packTrailerSize || !bytes.Equal(idx[:4], []byte{0xff, 't', 'O', 'c'}) || binary.BigEndian.Uint32(idx[4:8]) != 2 {
		return bad("not a version 2 index")
	}
	p := &packFile{size: packSize}
	prev := uint32(0)
	for i := range p.fanout {
		p.fanout[i] = binary.BigEndian.Uint32(idx[fanoutAt+4*i:])
		if p.fanout[i] < prev {
			return bad("fanout goes down")
		}
		prev = p.fanout[i]
	}
	n := int64(p.fanout[255])
	crcsAt := namesAt + 20*n
	offsAt := crcsAt + 4*n
	largeAt := offsAt + 4*n
	if largeAt+2*packTrailerSize > int64(len(idx)) {
		return bad("shorter than its object count")
	}
	p.hashes = idx[namesAt:crcsAt]
	p.offs = make([]int64, n)
	largeEnd := int64(len(idx)) - 2*packTrailerSize
	for i := range p.offs {
		o := binary.BigEndian.Uint32(idx[offsAt+4*int64(i):])
		off := int64(o)
		if o&0x80000000 != 0 {
			at := largeAt + 8*int64(o&0x7fffffff)
			if at+8 > largeEnd {
				return bad("large offset out of range")
			}
			off = int64(binary.BigEndian.Uint64(idx[at:]))
		}
		if off < packHeaderSize || off >= packSize-packTrailerSize {
			return bad("offset out of the pack")
		}
		p.offs[i] = off
	}
	p.sorted = slices.Clone(p.offs)
	slices.Sort(p.sorted)
	return p, nil
}

// find returns the index of h in the pack, -1 when absent.
func (p *packFile) find(h plumbing.Hash) int {
	lo := 0
	if h[0] > 0 {
		lo = int(p.fanout[h[0]-1])
	}
	hi := int(p.fanout[h[0]])
	i := lo + sort.Search(hi-lo, func(k int) bool { return bytes.Compare(p.hashes[20*(lo+k):20*(lo+k)+20], h[:]) >= 0 })
	if i < hi && bytes.Equal(p.hashes[20*i:20*i+20], h[:]) {
		return i
	}
	return -1
}

// end returns where the entry at off ends: the next entry's offset, or the
// pack's trailer.
func (p *packFile) end(off int64) int64 {
	i := sort.Search(len(p.sorted), func(k int) bool { return p.sorted[k] > off })
	if i < len(p.sorted) {
		return p.sorted[i]
	}
	return p.size - packTrailerSize
}

// object reads the object whose entry is at off: its type name and content,
// deltas applied.
func (p *packFile) object(off int64, depth int) (string, []byte, error) {
	if depth > packMaxDeltaDepth {
		return "", nil, errPackAbsent // go-git follows longer chains
	}
	in := getInflater()
	defer in.release()
	end := p.end(off)
	if end-off > packMaxEntry || end <= off {
		return "", nil, fmt.Errorf("entry at %d: %d bytes", off, end-off)
	}
	in.file = slices.Grow(in.file[:0], int(end-off))[:end-off]
	if _, err := p.f.ReadAt(in.file, off); err != nil {
		return "", nil, fmt.Errorf("read entry at %d: %w", off, err)
	}
	typ, size, n, err := packEntryHeader(in.file)
	if err != nil {
		return "", nil, fmt.Errorf("entry at %d: %w", off, err)
	}
	rest := in.file[n:]
	switch typ {
	case packObjCommit, packObjTree, packObjBlob, packObjTag:
		data, err := in.inflateExact(rest, size)
		if err != nil {
			return "", nil, fmt.Errorf("entry at %d: %w", off, err)
		}
		return packTypeNames[typ], data, nil
	case packObjOfsDelta, packObjRefDelta:
		var base func() (string, []byte, error)
		if typ == packObjOfsDelta {
			back, m, err := packOfsDeltaOffset(rest)
			if err != nil || back >= off || off-back < packHeaderSize {
				return "", nil, fmt.Errorf("entry at %d: bad delta base offset", off)
			}
			rest = rest[m:]
			base = func() (string, []byte, error) { return p.object(off-back, depth+1) }
		} else {
			if len(rest) < 20 {
				return "", nil, fmt.Errorf("entry at %d: truncated delta base", off)
			}
			i := p.find(plumbing.Hash(rest[:20]))
			if i < 0 {
				return "", nil, errPackAbsent // the base is elsewhere: go-git's
			}
			rest = rest[20:]
			base = func() (string, []byte, error) { return p.object(p.offs[i], depth+1) }
		}
		delta, err := in.inflateExact(rest, size)
		if err != nil {
			return "", nil, fmt.Errorf("entry at %d: %w", off, err)
		}
		btyp, bdata, err := base()
		if err != nil {
			return "", nil, err
		}
		data, err := packfile.PatchDelta(bdata, delta)
		if err != nil {
			return "", nil, fmt.Errorf("entry at %d: %w", off, err)
		}
		return btyp, data, nil
	}
	return "", nil, fmt.Errorf("entry at %d: unknown type %d", off, typ)
}

// packEntryHeader decodes an entry's type and (uncompressed) size and
// returns the header's length.
func packEntryHeader(b []byte) (typ int, size int64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, 0, errors.New("empty entry")
	}
	c := b[0]
	typ, size, n = int(c>>4&7), int64(c&15), 1
	for shift := 4; c&0x80 != 0; shift += 7 {
		if n >= len(b) || shift > 56 {
			return 0, 0, 0, errors.New("bad entry header")
		}
		c = b[n]
		n++
		size |= int64(c&0x7f) << shift
	}
	return typ, size, n, nil
}

// packOfsDeltaOffset decodes how far back an offset delta's base is.
func packOfsDeltaOffset(b []byte) (back int64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, errors.New("truncated")
	}
	c := b[0]
	back, n = int64(c&0x7f), 1
	for c&0x80 != 0 {
		if n >= len(b) || back > 1<<55 {
			return 0, 0, errors.New("bad offset")
		}
		c = b[n]
		n++
		back = (back+1)<<7 | int64(c&0x7f)
	}
	return back, n, nil
}

// inflateExact inflates the zlib stream src, which must hold exactly size
// bytes and nothing after it.
func (in *looseInflater) inflateExact(src []byte, size int64) ([]byte, error) {
	if err := checkInflatedSize(size, len(src)); err != nil {
		return nil, err
	}
	in.src.Reset(src)
	if err := in.reset(); err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if err := in.readRest(data, 0); err != nil {
		return nil, err
	}
	if in.src.Len() != 0 {
		return nil, fmt.Errorf("%d bytes of garbage after the entry", in.src.Len())
	}
	return data, nil
}
