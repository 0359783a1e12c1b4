package fakegithub

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/graft-studio/graft/repo"
)

// The Git Data API over the bare repository. Handlers run with s.mu held.

func (s *Server) apiURL(format string, args ...any) string {
	return s.URL + "repos/" + Owner + "/" + Name + "/" + fmt.Sprintf(format, args...)
}

// writeObject stores an object (a loose object) and returns its hash.
func (s *Server) writeObject(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	o := s.git.Storer.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(data)))
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	w.Write(data)
	w.Close()
	return s.git.Storer.SetEncodedObject(o)
}

type encoder interface {
	Encode(plumbing.EncodedObject) error
}

func (s *Server) encode(v encoder) (plumbing.Hash, error) {
	o := s.git.Storer.NewEncodedObject()
	if err := v.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.git.Storer.SetEncodedObject(o)
}

func (s *Server) hasObject(t plumbing.ObjectType, h plumbing.Hash) bool {
	o, err := s.git.Storer.EncodedObject(plumbing.AnyObject, h)
	return err == nil && (t == plumbing.AnyObject || o.Type() == t)
}

func (s *Server) createBlob(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if err := decodeBody(r, &in); err != nil || in.Content == nil {
		writeError(w, http.StatusUnprocessableEntity, "Invalid request: content is required")
		return
	}
	data := []byte(*in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		b, err := base64.StdEncoding.DecodeString(*in.Content)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, "Invalid base64 content")
			return
		}
		data = b
	default:
		writeError(w, http.StatusUnprocessableEntity, "Invalid encoding")
		return
	}
	h, err := s.writeObject(plumbing.BlobObject, data)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"sha": h.String(), "url": s.apiURL("git/blobs/%s", h)})
}

// treeEdit is one entry of a create-tree request, split into path segments.
type treeEdit struct {
	segs []string
	del  bool
	mode filemode.FileMode
	hash plumbing.Hash
}

func (s *Server) createTree(w http.ResponseWriter, r *http.Request) {
	var in struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path    string  `json:"path"`
			Mode    string  `json:"mode"`
			Type    string  `json:"type"`
			SHA     *string `json:"sha"`
			Content *string `json:"content"`
		} `json:"tree"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	base := plumbing.ZeroHash
	if in.BaseTree != "" {
		base = plumbing.NewHash(in.BaseTree)
		if !s.hasObject(plumbing.TreeObject, base) {
			writeError(w, http.StatusUnprocessableEntity, "base_tree is not a valid tree oid")
			return
		}
	}
	var edits []treeEdit
	for _, e := range in.Tree {
		segs := strings.Split(e.Path, "/")
		for _, seg := range segs {
			if seg == "" || seg == "." || seg == ".." || strings.EqualFold(seg, ".git") {
				writeError(w, http.StatusUnprocessableEntity, "tree.path contains a malformed path component")
				return
			}
		}
		m, err := filemode.New(e.Mode)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, "tree.mode is invalid")
			return
		}
		ed := treeEdit{segs: segs, mode: m}
		switch {
		case e.Content != nil:
			h, err := s.writeObject(plumbing.BlobObject, []byte(*e.Content))
			if err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
			ed.hash = h
		case e.SHA == nil:
			ed.del = true
		default:
			ed.hash = plumbing.NewHash(*e.SHA)
			want := plumbing.BlobObject
			if m == filemode.Dir {
				want = plumbing.TreeObject
			}
			if m != filemode.Submodule && !s.hasObject(want, ed.hash) {
				writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("tree.sha %s is not a valid %s", *e.SHA, want))
				return
			}
		}
		edits = append(edits, ed)
	}
	root, err := s.editTree(base, edits, 0)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	if root.IsZero() {
		if root, err = s.encode(&object.Tree{}); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	s.writeTree(w, http.StatusCreated, root, false)
}

// editTree applies edits (all below this tree, at depth) and returns the new
// tree (the zero hash when it is left empty). Deleting a path that does not
// exist is an error, as on GitHub.
func (s *Server) editTree(tree plumbing.Hash, edits []treeEdit, depth int) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if !tree.IsZero() {
		t, err := object.GetTree(s.git.Storer, tree)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	groups := map[string][]treeEdit{}
	var names []string
	for _, e := range edits {
		n := e.segs[depth]
		if _, ok := groups[n]; !ok {
			names = append(names, n)
		}
		groups[n] = append(groups[n], e)
	}
	for _, n := range names {
		var deeper []treeEdit
		for _, e := range groups[n] {
			if len(e.segs) > depth+1 {
				deeper = append(deeper, e)
				continue
			}
			if e.del {
				if _, ok := entries[n]; !ok {
					return plumbing.ZeroHash, fmt.Errorf("GitRPC::BadObjectState: cannot delete %s: no such path", strings.Join(e.segs, "/"))
				}
				delete(entries, n)
				continue
			}
			entries[n] = object.TreeEntry{Name: n, Mode: e.mode, Hash: e.hash}
		}
		if len(deeper) == 0 {
			continue
		}
		sub := plumbing.ZeroHash
		if cur, ok := entries[n]; ok {
			if cur.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("GitRPC::BadObjectState: %s is not a folder", strings.Join(deeper[0].segs[:depth+1], "/"))
			}
			sub = cur.Hash
		}
		h, err := s.editTree(sub, deeper, depth+1)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h.IsZero() {
			delete(entries, n)
		} else {
			entries[n] = object.TreeEntry{Name: n, Mode: filemode.Dir, Hash: h}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	t := &object.Tree{}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	return s.encode(t)
}

func modeString(m filemode.FileMode) string { return fmt.Sprintf("%06o", uint32(m)) }

func entryType(m filemode.FileMode) string {
	switch m {
	case filemode.Dir:
		return "tree"
	case filemode.Submodule:
		return "commit"
	}
	return "blob"
}

// writeTree answers a tree: its entries, all of them when recursive.
func (s *Server) writeTree(w http.ResponseWriter, status int, h plumbing.Hash, recursive bool) {
	t, err := object.GetTree(s.git.Storer, h)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	entries := []map[string]any{}
	var walk func(prefix string, t *object.Tree)
	walk = func(prefix string, t *object.Tree) {
		for _, e := range t.Entries {
			m := map[string]any{"path": prefix + e.Name, "mode": modeString(e.Mode), "type": entryType(e.Mode),
				"sha": e.Hash.String()}
			if entryType(e.Mode) == "blob" {
				if o, err := s.git.Storer.EncodedObject(plumbing.BlobObject, e.Hash); err == nil {
					m["size"] = o.Size()
				}
			}
			entries = append(entries, m)
			if recursive && e.Mode == filemode.Dir {
				if sub, err := object.GetTree(s.git.Storer, e.Hash); err == nil {
					walk(prefix+e.Name+"/", sub)
				}
			}
		}
	}
	walk("", t)
	writeJSON(w, status, map[string]any{"sha": h.String(), "url": s.apiURL("git/trees/%s", h),
		"tree": entries, "truncated": false})
}

func (s *Server) getTree(w http.ResponseWriter, r *http.Request, sha string) {
	h, ok := s.resolveTree(sha)
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.writeTree(w, http.StatusOK, h, r.URL.Query().Get("recursive") != "")
}

// resolveTree accepts a tree SHA or a commit SHA (as GitHub does).
func (s *Server) resolveTree(sha string) (plumbing.Hash, bool) {
	h := plumbing.NewHash(sha)
	if s.hasObject(plumbing.TreeObject, h) {
		return h, true
	}
	if c, err := object.GetCommit(s.git.Storer, h); err == nil {
		return c.TreeHash, true
	}
	return plumbing.ZeroHash, false
}

type signatureJSON struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date,omitempty"`
}

func (s *Server) createCommit(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Message   *string        `json:"message"`
		Tree      string         `json:"tree"`
		Parents   []string       `json:"parents"`
		Author    *signatureJSON `json:"author"`
		Committer *signatureJSON `json:"committer"`
	}
	if err := decodeBody(r, &in); err != nil || in.Message == nil {
		writeError(w, http.StatusUnprocessableEntity, "Invalid request: message and tree are required")
		return
	}
	tree := plumbing.NewHash(in.Tree)
	if !s.hasObject(plumbing.TreeObject, tree) {
		writeError(w, http.StatusUnprocessableEntity, "Tree SHA does not exist")
		return
	}
	c := &object.Commit{Message: *in.Message, TreeHash: tree}
	for _, p := range in.Parents {
		h := plumbing.NewHash(p)
		if !s.hasObject(plumbing.CommitObject, h) {
			writeError(w, http.StatusUnprocessableEntity, "Parent SHA does not exist or is not a commit object")
			return
		}
		c.ParentHashes = append(c.ParentHashes, h)
	}
	now := s.Now()
	login := caller(r)
	sig := func(in *signatureJSON) (object.Signature, error) {
		if in == nil {
			return object.Signature{Name: login, Email: login + "@users.noreply.github.com", When: now}, nil
		}
		when := now
		if in.Date != "" {
			t, err := time.Parse(time.RFC3339, in.Date)
			if err != nil {
				return object.Signature{}, err
			}
			when = t
		}
		return object.Signature{Name: in.Name, Email: in.Email, When: when}, nil
	}
	var err error
	if c.Author, err = sig(in.Author); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Invalid author date")
		return
	}
	signed := in.Committer == nil
	if signed {
		// Without a custom committer GitHub commits as itself and signs
		// the commit with its own key, so it shows as verified.
		c.Committer = object.Signature{Name: "GitHub", Email: "noreply@github.com", When: now}
	} else if c.Committer, err = sig(in.Committer); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Invalid committer date")
		return
	}
	h, err := s.commitObject(c, signed)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.writeCommit(w, http.StatusCreated, h)
}

// commitObject stores a commit, signed by "GitHub" when sign is set (a
// signature header that Signed recognises; it is not a real PGP signature).
func (s *Server) commitObject(c *object.Commit, sign bool) (plumbing.Hash, error) {
	if sign {
		c.PGPSignature = "-----BEGIN PGP SIGNATURE-----\n\nfakegithub web-flow signature\n-----END PGP SIGNATURE-----\n"
	}
	h, err := s.encode(c)
	if err == nil && sign {
		s.signed[h.String()] = true
	}
	return h, err
}

func (s *Server) writeCommit(w http.ResponseWriter, status int, h plumbing.Hash) {
	c, err := object.GetCommit(s.git.Storer, h)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	parents := []map[string]string{}
	for _, p := range c.ParentHashes {
		parents = append(parents, map[string]string{"sha": p.String(), "url": s.apiURL("git/commits/%s", p)})
	}
	sig := func(s object.Signature) signatureJSON {
		return signatureJSON{Name: s.Name, Email: s.Email, Date: s.When.Format(time.RFC3339)}
	}
	verification := map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil}
	if s.signed[h.String()] {
		verification = map[string]any{"verified": true, "reason": "valid", "signature": c.PGPSignature}
	}
	writeJSON(w, status, map[string]any{
		"sha": h.String(), "url": s.apiURL("git/commits/%s", h),
		"html_url": s.URL + Owner + "/" + Name + "/commit/" + h.String(),
		"message":  c.Message, "author": sig(c.Author), "committer": sig(c.Committer),
		"tree":    map[string]string{"sha": c.TreeHash.String(), "url": s.apiURL("git/trees/%s", c.TreeHash)},
		"parents": parents, "verification": verification,
	})
}

func (s *Server) getCommit(w http.ResponseWriter, sha string) {
	s.writeCommit(w, http.StatusOK, plumbing.NewHash(sha))
}

// refValue returns the commit a full ref name points at ("" when missing).
func (s *Server) refValue(name string) string {
	branch, ok := strings.CutPrefix(name, "refs/heads/")
	if !ok {
		return ""
	}
	sha, found, err := s.Repo.Head(branch)
	if err != nil || !found {
		return ""
	}
	return sha
}

func (s *Server) writeRef(w http.ResponseWriter, status int, name, sha string) {
	writeJSON(w, status, map[string]any{
		"ref": name, "url": s.apiURL("git/refs/%s", strings.TrimPrefix(name, "refs/")),
		"object": map[string]string{"type": "commit", "sha": sha, "url": s.apiURL("git/commits/%s", sha)},
	})
}

func (s *Server) getRef(w http.ResponseWriter, name string) {
	sha := s.refValue(name)
	if sha == "" {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.writeRef(w, http.StatusOK, name, sha)
}

func validRefName(name string) bool {
	return strings.HasPrefix(name, "refs/heads/") && plumbing.ReferenceName(name).Validate() == nil
}

func (s *Server) createRef(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if err := decodeBody(r, &in); err != nil || !validRefName(in.Ref) {
		writeError(w, http.StatusUnprocessableEntity, "Reference name is invalid (the fake serves refs/heads/* only)")
		return
	}
	if !s.hasObject(plumbing.CommitObject, plumbing.NewHash(in.SHA)) {
		writeError(w, http.StatusUnprocessableEntity, "Object does not exist")
		return
	}
	if raced(r) {
		s.raceCreate(in.Ref, in.SHA)
	}
	if s.refValue(in.Ref) != "" {
		writeError(w, http.StatusUnprocessableEntity, "Reference already exists")
		return
	}
	branch := strings.TrimPrefix(in.Ref, "refs/heads/")
	if p, ok := s.protection(branch); ok {
		p.RequirePullRequest = false // a pull request needs its head branch first
		if msg := s.refusalFor(p, "", in.SHA, false); msg != "" {
			writeError(w, http.StatusUnprocessableEntity, msg)
			return
		}
	}
	if err := s.Repo.UpdateRef(in.Ref, "", in.SHA); repo.IsRefMoved(err) {
		// Written past the fake (a test's own commit) since the check above.
		writeError(w, http.StatusUnprocessableEntity, "Reference already exists")
		return
	} else if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Reference cannot be created: "+err.Error())
		return
	}
	s.pushed(branch, "", in.SHA, false, caller(r))
	s.writeRef(w, http.StatusCreated, in.Ref, in.SHA)
}

func (s *Server) updateRef(w http.ResponseWriter, r *http.Request, name string) {
	var in struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if err := decodeBody(r, &in); err != nil || in.SHA == "" {
		writeError(w, http.StatusUnprocessableEntity, "Invalid request: sha is required")
		return
	}
	if raced(r) {
		s.raceUpdate(name)
	}
	cur := s.refValue(name)
	if cur == "" {
		writeError(w, http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	target := plumbing.NewHash(in.SHA)
	if !s.hasObject(plumbing.CommitObject, target) {
		writeError(w, http.StatusUnprocessableEntity, "Object does not exist")
		return
	}
	forward := s.isAncestor(plumbing.NewHash(cur), target)
	if !in.Force && !forward {
		writeError(w, http.StatusUnprocessableEntity, "Update is not a fast forward")
		return
	}
	branch := strings.TrimPrefix(name, "refs/heads/")
	if _, protected := s.protection(branch); protected && !forward {
		writeError(w, http.StatusUnprocessableEntity, "Cannot force-push to this protected branch")
		return
	}
	if msg := s.refusal(branch, cur, in.SHA, false); msg != "" && cur != in.SHA {
		writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	if cur != in.SHA {
		if err := s.Repo.UpdateRef(name, cur, in.SHA); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		s.pushed(branch, cur, in.SHA, !forward, caller(r))
	}
	s.writeRef(w, http.StatusOK, name, in.SHA)
}

func (s *Server) deleteRef(w http.ResponseWriter, r *http.Request, name string) {
	cur := s.refValue(name)
	if cur == "" {
		writeError(w, http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	branch := strings.TrimPrefix(name, "refs/heads/")
	if msg := s.refusal(branch, cur, "", true); msg != "" {
		writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	if err := s.Repo.UpdateRef(name, cur, ""); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.pushed(branch, cur, "", false, caller(r))
	w.WriteHeader(http.StatusNoContent)
}

// MoveBranch moves (or, with sha "", deletes; or, from nothing, creates) a
// branch as a push to GitHub would, force-pushes included, and sends the
// push webhook (and pull_request synchronize for the pull requests it heads).
func (s *Server) MoveBranch(branch, sha string) error {
	s.mu.Lock()
	defer s.hooks.flush()
	defer s.mu.Unlock()
	cur := s.refValue("refs/heads/" + branch)
	if err := s.Repo.UpdateRef("refs/heads/"+branch, cur, sha); err != nil {
		return err
	}
	forced := cur != "" && sha != "" && !s.isAncestor(plumbing.NewHash(cur), plumbing.NewHash(sha))
	s.pushed(branch, cur, sha, forced, "someone")
	return nil
}

// isAncestor reports whether a is reachable from b (a == b included).
func (s *Server) isAncestor(a, b plumbing.Hash) bool {
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{b}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == a {
			return true
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(s.git.Storer, h)
		if err != nil {
			continue
		}
		queue = append(queue, c.ParentHashes...)
	}
	return false
}

// raceCommit makes another writer's commit on parent ("" = none): parent's
// tree plus the file race/<n>.txt. With keepTrailers, the message repeats
// parent's Graft- trailers, as another graft replica's draft commit would
// (a draft commit lists the whole mine set).
func (s *Server) raceCommit(parent string, keepTrailers bool) (string, error) {
	s.races++
	base := plumbing.ZeroHash
	var parents []plumbing.Hash
	msg := fmt.Sprintf("Race %d\n", s.races)
	if parent != "" {
		c, err := object.GetCommit(s.git.Storer, plumbing.NewHash(parent))
		if err != nil {
			return "", err
		}
		base, parents = c.TreeHash, []plumbing.Hash{c.Hash}
		var trailers []string
		for _, line := range strings.Split(c.Message, "\n") {
			if strings.HasPrefix(line, "Graft-") {
				trailers = append(trailers, line)
			}
		}
		if keepTrailers && len(trailers) > 0 {
			msg += "\n" + strings.Join(trailers, "\n") + "\n"
		}
	}
	blob, err := s.writeObject(plumbing.BlobObject, fmt.Appendf(nil, "race %d\n", s.races))
	if err != nil {
		return "", err
	}
	tree, err := s.editTree(base, []treeEdit{{segs: []string{"race", fmt.Sprintf("%d.txt", s.races)}, mode: filemode.Regular, hash: blob}}, 0)
	if err != nil {
		return "", err
	}
	now := time.Now()
	sig := object.Signature{Name: "another writer", Email: "other@example.org", When: now}
	h, err := s.encode(&object.Commit{Author: sig, Committer: sig, Message: msg,
		TreeHash: tree, ParentHashes: parents})
	return h.String(), err
}

// raceUpdate moves ref to another writer's commit on its tip.
func (s *Server) raceUpdate(name string) {
	cur := s.refValue(name)
	if cur == "" {
		return
	}
	if sha, err := s.raceCommit(cur, true); err == nil {
		s.Repo.UpdateRef(name, cur, sha)
	}
}

// raceCreate creates ref first, with another writer's commit on the first
// parent of the commit the request wanted (so the request's commit is not in
// the racer's history).
func (s *Server) raceCreate(name, wanted string) {
	if s.refValue(name) != "" {
		return
	}
	parent := ""
	if c, err := object.GetCommit(s.git.Storer, plumbing.NewHash(wanted)); err == nil && len(c.ParentHashes) > 0 {
		parent = c.ParentHashes[0].String()
	}
	if sha, err := s.raceCommit(parent, false); err == nil {
		s.Repo.UpdateRef(name, "", sha)
	}
}
