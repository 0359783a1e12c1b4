package repo

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/klauspost/compress/zlib"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Large commits are written as one pack. A commit of many new objects (a
// corpus imported, a bulk change) writes them into one pack file and its
// index, as git does for a push or fast-import, instead of one loose file
// each: thousands of loose files cost a file system entry and a sync each,
// every read of them three system calls, and git gc would pack them later
// anyway. Smaller commits stay loose. The pack holds whole objects (no
// deltas) and is read like any pack (pack.go).

// packMinObjects is the fewest new objects a commit writes as a pack (a
// variable for tests).
var packMinObjects = 256

// packObject is one object to write into a pack.
type packObject struct {
	hash plumbing.Hash
	typ  plumbing.ObjectType
	data []byte
}

// writePack writes objs as one pack and its version 2 index into
// objects/pack and returns the pack's name (its checksum). Both files are
// synced before they are renamed into place, the index last (a reader finds
// a pack by its index), and then the folder is synced.
func writePack(objects string, objs []packObject) (string, error) {
	dir := filepath.Join(objects, "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	type entry struct {
		hash plumbing.Hash
		off  int64
		crc  uint32
	}
	entries := make([]entry, len(objs))
	var name string
	packTmp, err := writeTemp(dir, "tmp_pack_", func(w io.Writer) error {
		sum := sha1.New()
		cw := &countWriter{w: io.MultiWriter(w, sum)}
		head := append([]byte("PACK"), 0, 0, 0, 2)
		head = binary.BigEndian.AppendUint32(head, uint32(len(objs)))
		if _, err := cw.Write(head); err != nil {
			return err
		}
		crc := crc32.NewIEEE()
		ew := io.MultiWriter(cw, crc)
		zw, err := zlib.NewWriterLevel(ew, zlib.DefaultCompression)
		if err != nil {
			return err
		}
		for i, o := range objs {
			crc.Reset()
			entries[i] = entry{hash: o.hash, off: cw.n}
			if _, err := ew.Write(packEntryHead(packTypeOf(o.typ), int64(len(o.data)))); err != nil {
				return err
			}
			zw.Reset(ew)
			if _, err := zw.Write(o.data); err != nil {
				return err
			}
			if err := zw.Close(); err != nil {
				return err
			}
			entries[i].crc = crc.Sum32()
		}
		trailer := sum.Sum(nil)
		name = hex.EncodeToString(trailer)
		_, err = w.Write(trailer)
		return err
	})
	if err != nil {
		return "", err
	}
	defer os.Remove(packTmp) // gone once renamed
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	idxTmp, err := writeTemp(dir, "tmp_idx_", func(w io.Writer) error {
		sum := sha1.New()
		iw := io.MultiWriter(w, sum)
		b := []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}
		var fanout [256]uint32
		for _, e := range entries {
			fanout[e.hash[0]]++
		}
		total := uint32(0)
		for i := range fanout {
			total += fanout[i]
			b = binary.BigEndian.AppendUint32(b, total)
		}
		for _, e := range entries {
			b = append(b, e.hash[:]...)
		}
		for _, e := range entries {
			b = binary.BigEndian.AppendUint32(b, e.crc)
		}
		var large []byte
		for _, e := range entries {
			if e.off < 1<<31 {
				b = binary.BigEndian.AppendUint32(b, uint32(e.off))
				continue
			}
			b = binary.BigEndian.AppendUint32(b, 1<<31|uint32(len(large)/8))
			large = binary.BigEndian.AppendUint64(large, uint64(e.off))
		}
		b = append(b, large...)
		packSum, err := hex.DecodeString(name)
		if err != nil {
			return err
		}
		b = append(b, packSum...)
		if _, err := iw.Write(b); err != nil {
			return err
		}
		_, err = w.Write(sum.Sum(nil))
		return err
	})
	if err != nil {
		return "", err
	}
	defer os.Remove(idxTmp)
	base := filepath.Join(dir, "pack-"+name)
	if err := os.Rename(packTmp, base+".pack"); err != nil {
		return "", err
	}
	if err := os.Rename(idxTmp, base+".idx"); err != nil {
		return "", err
	}
	refSyncDir(dir)
	return name, nil
}

// writeTemp writes a new read-only file in dir through fill, synced, and
// returns its name.
func writeTemp(dir, prefix string, fill func(io.Writer) error) (string, error) {
	f, err := os.CreateTemp(dir, prefix)
	if err != nil {
		return "", err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(0o444)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// packEntryHead encodes an entry's type and size.
func packEntryHead(typ int, size int64) []byte {
	b := []byte{byte(typ<<4) | byte(size&15)}
	for size >>= 4; size > 0; size >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
	}
	return b
}

// packTypeOf is an object type's number in a pack.
func packTypeOf(t plumbing.ObjectType) int {
	switch t {
	case plumbing.CommitObject:
		return packObjCommit
	case plumbing.TreeObject:
		return packObjTree
	case plumbing.TagObject:
		return packObjTag
	}
	return packObjBlob
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// gitStorage is go-git's storage of the repository's objects, which lists
// the packs again when it finds an object nowhere: another process (graft
// committing a pack, git gc, a fetch) may have written a pack since go-git
// listed them.
type gitStorage struct{ *filesystem.Storage }

// EncodedObject implements storer.EncodedObjectStorer.
func (s gitStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := s.Storage.EncodedObject(t, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		s.Reindex()
		o, err = s.Storage.EncodedObject(t, h)
	}
	return o, err
}
