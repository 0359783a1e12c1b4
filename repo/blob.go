package repo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/klauspost/compress/zlib"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/graft-studio/graft/errs"
)

// Blobs are read on the hot path of an index compile (every document) and of
// search snippets. A repository graft commits to holds its new objects loose
// (objects/xx/yyyy…, a zlib stream of "<type> <size>\0<content>"), and go-git
// spends most of a loose read on path resolution, fresh zlib state and
// copies, all under r.mu. So a blob is read from its loose file directly,
// without r.mu, with pooled zlib state, or from a pack (pack.go); anything
// else (alternates, a delta base in another pack, an unreadable file) goes
// through go-git as before. Trees are read the same way (gitEntries, whose
// callers hold r.mu for its cache).

// ReadBlob returns the bytes of a blob by its SHA (a version). It fails with
// DOCUMENT_NOT_FOUND when there is no such blob (no object, or another kind
// of object), and with INTERNAL when the object is corrupt.
func (r *Repo) ReadBlob(version string) ([]byte, error) {
	if !gitIsSHA(version) {
		return nil, errs.New(errs.InputValidationFailed, "%q is not a blob SHA", version)
	}
	return r.readBlob(plumbing.NewHash(version))
}

// readBlob reads blob h: from the blob cache (blobcache.go), else from a
// pack or its loose file directly, else through go-git. What it returns is
// the caller's own copy. The caller must not hold r.mu.
func (r *Repo) readBlob(h plumbing.Hash) ([]byte, error) {
	if data, ok := r.blobs.get(h); ok {
		return data, nil
	}
	data, err := r.readBlobStored(h)
	if err == nil {
		r.blobs.put(h, data)
	}
	return data, err
}

// readBlobStored reads blob h from the object store.
func (r *Repo) readBlobStored(h plumbing.Hash) ([]byte, error) {
	data, typ, err := r.readObjectDirect(h)
	switch {
	case errors.Is(err, errLooseAbsent): // go-git's to read
	case err != nil:
		return nil, err
	case typ != "blob":
		return nil, errs.New(errs.DocumentNotFound, "no blob %s: it is a %s", h, typ).With("version", h.String())
	default:
		return data, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// go-git lists its packs again when the object is in none (gitStorage).
	blob, err := object.GetBlob(r.repo.Storer, h)
	if err != nil {
		return nil, errs.New(errs.DocumentNotFound, "no blob %s: %v", h, err).With("version", h.String())
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, errs.New(errs.Internal, "read blob %s: %v", h, err)
	}
	defer rd.Close()
	data = make([]byte, blob.Size)
	if _, err := io.ReadFull(rd, data); err != nil {
		return nil, errs.New(errs.Internal, "read blob %s: %v", h, err)
	}
	return data, nil
}

// errLooseAbsent says that a loose object file could not be opened: the
// object may be packed, in an alternate, or missing; go-git decides.
var errLooseAbsent = errors.New("no loose object file")

// looseInflater is the reusable state of one loose read.
type looseInflater struct {
	file []byte        // the compressed file
	src  bytes.Reader  // over file; an io.ByteReader, so flate reads no further than the stream
	zr   io.ReadCloser // a zlib reader (zlib.Resetter), nil until first used
	one  [1]byte       // the read that must find the end of the stream
}

var looseInflaters = sync.Pool{New: func() any { return &looseInflater{file: make([]byte, 0, 8<<10)} }}

func getInflater() *looseInflater { return looseInflaters.Get().(*looseInflater) }

// release gives the inflater back to the pool (unless its buffer grew large).
func (in *looseInflater) release() {
	if cap(in.file) <= looseMaxPooled {
		in.file = in.file[:0]
		looseInflaters.Put(in)
	}
}

// looseMaxPooled bounds the compressed-file buffer kept in the pool.
const looseMaxPooled = 1 << 20

// looseMaxRatio bounds size / compressed size: deflate cannot expand by more
// than about 1032:1, so a header claiming more is corrupt (and must not make
// us allocate its size).
const looseMaxRatio = 1100

// readLooseObject reads object h from its loose file and returns its
// content and type name: errLooseAbsent when there is no file to read,
// INTERNAL when the file is not a well-formed object of its declared size.
// It does not take r.mu: object files are written to a temporary name and
// renamed into place, so an open file is always complete.
func (r *Repo) readLooseObject(h plumbing.Hash) ([]byte, string, error) {
	hex := h.String()
	in := getInflater()
	defer in.release()
	path := filepath.Join(r.commonDir, "objects", hex[:2], hex[2:])
	fd, err := looseRetry(func() (int, error) { return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return nil, "", errLooseAbsent
	}
	defer syscall.Close(fd)
	// A read that does not fill the buffer has in practice read the whole
	// file, so the object is decoded at once; only when that fails is the
	// file read to its end (the proof) and decoded again.
	var eof bool
	if in.file, eof, err = readLooseFile(fd, in.file[:0], false); err != nil {
		return nil, "", errs.New(errs.Internal, "read loose object %s: %v", hex, err)
	}
	data, typ, err := in.inflate()
	if err != nil && !eof {
		if in.file, _, err = readLooseFile(fd, in.file, true); err != nil {
			return nil, "", errs.New(errs.Internal, "read loose object %s: %v", hex, err)
		}
		data, typ, err = in.inflate()
	}
	if err != nil {
		return nil, "", errs.New(errs.Internal, "read loose object %s: %v", hex, err).With("version", hex)
	}
	return data, typ, nil
}

// readObjectDirect reads object h from a pack or its loose file, without
// go-git: its content and type name. Packs are listed again when h is in
// none of them and has no loose file (git gc or a fetch may have written
// one). errLooseAbsent says that go-git must read it (an alternate, a delta
// base in another pack, or no such object).
func (r *Repo) readObjectDirect(h plumbing.Hash) ([]byte, string, error) {
	data, typ, err := r.packs.read(h)
	if errors.Is(err, errPackAbsent) {
		if data, typ, err = r.readLooseObject(h); !errors.Is(err, errLooseAbsent) || !r.packs.refresh() {
			return data, typ, err
		}
		if data, typ, err = r.packs.read(h); errors.Is(err, errPackAbsent) {
			return nil, "", errLooseAbsent
		}
	}
	if err != nil {
		return nil, "", errs.New(errs.Internal, "read packed object %s: %v", h, err).With("version", h.String())
	}
	return data, typ, nil
}

// readLooseFile appends what it reads from fd to buf: up to the end of the
// file with toEOF, else until a read leaves room in buf. eof reports that the
// end was seen. It calls the system directly, as does the open: an os.File
// would also be registered with the network poller, which costs as much as
// the read itself for a file this small.
func readLooseFile(fd int, buf []byte, toEOF bool) (_ []byte, eof bool, err error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := looseRetry(func() (int, error) { return syscall.Read(fd, buf[len(buf):cap(buf)]) })
		if err != nil {
			return buf, false, err
		}
		if n == 0 {
			return buf, true, nil
		}
		buf = buf[:len(buf)+n]
		if !toEOF && len(buf) < cap(buf) {
			return buf, false, nil
		}
	}
}

// looseRetry calls f again while it is interrupted by a signal.
func looseRetry(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// inflate decodes the loose object in in.file and returns its content and
// type. The content is checked against the declared size, the zlib checksum
// is verified, and nothing may follow the zlib stream.
func (in *looseInflater) inflate() (data []byte, typ string, err error) {
	in.src.Reset(in.file)
	if err := in.reset(); err != nil {
		return nil, "", err
	}
	// The header is "<type> <decimal size>\0": at most 6+1+19+1 bytes.
	var head [32]byte
	n, nul, eof := 0, -1, false
	for nul < 0 && n < len(head) && !eof {
		m, err := in.zr.Read(head[n:])
		n += m
		nul = bytes.IndexByte(head[:n], 0)
		if err == io.EOF {
			eof = true
		} else if err != nil {
			return nil, "", err
		}
	}
	if nul < 0 {
		return nil, "", errors.New("no object header")
	}
	typ, size, err := looseParseHeader(head[:nul])
	if err != nil {
		return nil, "", err
	}
	if err := checkInflatedSize(size, len(in.file)); err != nil {
		return nil, "", err
	}
	data = make([]byte, size)
	got := copy(data, head[nul+1:n])
	if got < n-nul-1 {
		return nil, "", fmt.Errorf("content longer than the declared %d bytes", size)
	}
	if !eof {
		if err := in.readRest(data, got); err != nil {
			return nil, "", err
		}
	} else if int64(got) != size {
		return nil, "", fmt.Errorf("content shorter than the declared %d bytes", size)
	}
	if in.src.Len() != 0 {
		return nil, "", fmt.Errorf("%d bytes of garbage after the object", in.src.Len())
	}
	return data, typ, nil
}

// checkInflatedSize refuses a declared size that deflate cannot reach from
// compressed bytes (and that must not make us allocate it).
func checkInflatedSize(size int64, compressed int) error {
	if size > int64(compressed)*looseMaxRatio+64 {
		return fmt.Errorf("header claims %d bytes from %d compressed", size, compressed)
	}
	return nil
}

// readRest reads the rest of the zlib stream into data[got:] and checks
// that the stream ends there (which verifies its checksum).
func (in *looseInflater) readRest(data []byte, got int) error {
	if _, err := io.ReadFull(in.zr, data[got:]); err != nil {
		return fmt.Errorf("content shorter than the declared %d bytes: %w", len(data), err)
	}
	if m, err := in.zr.Read(in.one[:]); m != 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			return fmt.Errorf("content longer than the declared %d bytes", len(data))
		}
		return err
	}
	return nil
}

// reset starts the zlib reader on in.src.
func (in *looseInflater) reset() (err error) {
	if in.zr == nil {
		in.zr, err = zlib.NewReader(&in.src)
	} else {
		err = in.zr.(zlib.Resetter).Reset(&in.src, nil)
	}
	return err
}

// looseParseHeader splits "<type> <size>" and checks both parts.
func looseParseHeader(head []byte) (typ string, size int64, err error) {
	t, s, ok := bytes.Cut(head, []byte{' '})
	if !ok {
		return "", 0, fmt.Errorf("malformed object header %q", head)
	}
	for _, k := range []string{"blob", "tree", "commit", "tag"} {
		if string(t) == k {
			typ = k
		}
	}
	if typ == "" {
		return "", 0, fmt.Errorf("unknown object type %q", t)
	}
	if len(s) == 0 || len(s) > 18 {
		return "", 0, fmt.Errorf("malformed object size %q", s)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return "", 0, fmt.Errorf("malformed object size %q", s)
		}
		size = size*10 + int64(c-'0')
	}
	return typ, size, nil
}

// BlobSize returns the size in bytes of a blob by its SHA, from the object's
// header (a loose object's first bytes, a pack entry's header), without
// reading its content. DOCUMENT_NOT_FOUND when there is no such object.
func (r *Repo) BlobSize(version string) (int64, error) {
	if !gitIsSHA(version) {
		return 0, errs.New(errs.InputValidationFailed, "%q is not a blob SHA", version)
	}
	sizer, ok := r.repo.Storer.(interface {
		EncodedObjectSize(plumbing.Hash) (int64, error)
	})
	if !ok {
		data, err := r.ReadBlob(version)
		return int64(len(data)), err
	}
	h := plumbing.NewHash(version)
	r.mu.Lock()
	size, err := sizer.EncodedObjectSize(h)
	r.mu.Unlock()
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// Another process may have packed it since the packs were listed.
		data, rerr := r.ReadBlob(version)
		return int64(len(data)), rerr
	}
	if err != nil {
		return 0, errs.New(errs.Internal, "size of blob %s: %v", version, err)
	}
	return size, nil
}
