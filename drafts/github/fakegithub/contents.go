package fakegithub

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// putContents creates or updates one file with a commit (the contents API).
// It is how an empty repository gets its first commit: the Git Data API
// answers 409 until the repository has one. Updating an existing file needs
// its blob SHA (sha), as on GitHub.
func (s *Server) putContents(w http.ResponseWriter, r *http.Request, path string) {
	var in struct {
		Message string  `json:"message"`
		Content string  `json:"content"`
		Branch  string  `json:"branch"`
		SHA     *string `json:"sha"`
	}
	if err := decodeBody(r, &in); err != nil || in.Message == "" {
		invalid(w, "Contents", "message and content are required")
		return
	}
	data, err := base64.StdEncoding.DecodeString(in.Content)
	if err != nil {
		invalid(w, "Contents", "content is not valid Base64")
		return
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.EqualFold(seg, ".git") {
			invalid(w, "Contents", "path is invalid")
			return
		}
	}
	branch := in.Branch
	if branch == "" {
		branch = s.settings.DefaultBranch
	}
	tip := s.refValue("refs/heads/" + branch)
	if tip == "" && !s.empty() {
		writeError(w, http.StatusNotFound, "Branch "+branch+" not found")
		return
	}
	blob, err := s.writeObject(plumbing.BlobObject, data)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	base := plumbing.ZeroHash
	var parents []plumbing.Hash
	if tip != "" {
		c, err := object.GetCommit(s.git.Storer, plumbing.NewHash(tip))
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		base, parents = c.TreeHash, []plumbing.Hash{c.Hash}
		_, cur, _ := s.Repo.ReadFile(tip, path)
		switch {
		case cur != "" && in.SHA == nil:
			invalid(w, "Contents", "\"sha\" wasn't supplied.")
			return
		case cur != "" && *in.SHA != cur:
			writeError(w, http.StatusConflict, path+" does not match "+*in.SHA)
			return
		}
	}
	tree, err := s.editTree(base, []treeEdit{{segs: strings.Split(path, "/"), mode: filemode.Regular, hash: blob}}, 0)
	if err != nil {
		invalid(w, "Contents", err.Error())
		return
	}
	login := caller(r)
	now := s.Now()
	c := &object.Commit{Message: in.Message, TreeHash: tree, ParentHashes: parents,
		Author:    object.Signature{Name: login, Email: login + "@users.noreply.github.com", When: now},
		Committer: object.Signature{Name: "GitHub", Email: "noreply@github.com", When: now}}
	h, err := s.commitObject(c, true)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if msg := s.refusal(branch, tip, h.String(), false); msg != "" && tip != "" {
		writeError(w, http.StatusConflict, msg)
		return
	}
	if err := s.Repo.UpdateRef("refs/heads/"+branch, tip, h.String()); err != nil {
		writeError(w, http.StatusConflict, "Reference update failed")
		return
	}
	s.pushed(branch, tip, h.String(), false, login)
	status := http.StatusOK
	if tip == "" {
		status = http.StatusCreated
	}
	writeJSON(w, status, map[string]any{
		"content": map[string]any{"name": path[strings.LastIndex(path, "/")+1:], "path": path, "sha": blob.String()},
		"commit":  map[string]any{"sha": h.String(), "message": in.Message, "tree": map[string]string{"sha": tree.String()}},
	})
}
