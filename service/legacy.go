package service

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/graft-studio/graft/errs"
	"github.com/graft-studio/graft/repo"
)

// The legacy asset store: before assets lived in Git, put_asset wrote them to
// .graft/assets/<key> and GET /assets/{key} served them from there — so they
// were live. They are imported once, into production (where they were
// already served), as one commit; then the folder is renamed to
// .graft/assets.imported (kept, never read again). Until the import lands
// (production refuses it, a checkout of production has local changes there)
// production's reads still find a legacy file by its key.

// LegacyAssetsDirName is the legacy store's folder in the state folder.
const LegacyAssetsDirName = "assets"

// legacyImportedName is what the legacy folder is renamed to once imported.
const legacyImportedName = "assets.imported"

// LegacyImport says what an import of the legacy store did.
type LegacyImport struct {
	// Imported are the keys committed to production.
	Imported []string `json:"imported"`
	// Present are the keys production already held with the same bytes.
	Present []string `json:"present"`
	// Kept are the keys production holds with other bytes: production's
	// stay, the legacy file stays in the renamed folder.
	Kept []string `json:"kept"`
	// Skipped are files whose names are not asset keys (left in the folder).
	Skipped []string `json:"skipped"`
	// Commit is the import commit ("" when nothing was committed).
	Commit string `json:"commit,omitempty"`
	// MovedTo is where the legacy folder went ("" when there was none).
	MovedTo string `json:"movedTo,omitempty"`
}

// legacyDir is the legacy store's folder.
func (s *Service) legacyDir() string { return filepath.Join(s.Project.StateDir, LegacyAssetsDirName) }

// importLegacyAssets imports the legacy store once per process, before the
// first asset operation. A failed import is logged once and not tried again
// by every asset operation after it, only once the store changed
// (legacyMark: production moved, or the legacy folder changed); production's
// reads fall back to the legacy files meanwhile. An import stopped by its
// caller's cancellation is no verdict on the store: the next operation tries.
func (s *Service) importLegacyAssets(ctx context.Context) {
	s.legacy.Lock()
	defer s.legacy.Unlock()
	if s.legacy.done {
		return
	}
	mark := s.legacyMark()
	if s.legacy.failed && s.legacy.mark == mark {
		return
	}
	_, err := s.ImportLegacyAssets(ctx)
	switch {
	case err == nil:
		s.legacy.done = true
	case ctx.Err() == nil:
		s.legacy.failed, s.legacy.mark = true, mark
		s.logger().Warn("the legacy asset store ("+filepath.Join(".graft", LegacyAssetsDirName)+") was not imported; production serves its files from there "+
			"until it is, and the import is tried again once production or the folder changes", "error", err.Error(), "code", string(errs.CodeOf(err)))
	}
}

// legacyMark describes what a failed import depends on and graft can read
// cheaply: production's tip and the legacy folder's modification time.
func (s *Service) legacyMark() string {
	tip, _, err := s.Project.Git.Head(s.Project.Production())
	if err != nil {
		tip = "unreadable"
	}
	info, err := os.Lstat(s.legacyDir())
	if err != nil {
		return tip + " no folder"
	}
	return tip + " " + info.ModTime().UTC().Format(time.RFC3339Nano)
}

// ImportLegacyAssets commits the files of the legacy store (.graft/assets)
// to production under assets.dir, in one commit made by graft, and renames
// the folder to .graft/assets.imported. It is idempotent: a key production
// already holds with the same bytes is not committed again, one it holds with
// other bytes keeps production's (the legacy file stays in the renamed
// folder), and a run that finds no folder does nothing. A checked-out
// production is brought along as with a direct publish (a checkout with
// local changes there refuses, and the folder stays for the next try).
func (s *Service) ImportLegacyAssets(ctx context.Context) (LegacyImport, error) {
	out := LegacyImport{Imported: []string{}, Present: []string{}, Kept: []string{}, Skipped: []string{}}
	dir := s.legacyDir()
	if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
		return out, nil
	}
	files := map[string]string{} // key → file
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		key := filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".put-") || repo.CheckAssetKey(key) != nil {
			out.Skipped = append(out.Skipped, key) // a write that never finished, or not a key
			return nil
		}
		files[key] = p
		return nil
	})
	if err != nil {
		return out, errs.New(errs.Internal, "the legacy asset store %s cannot be read: %v", dir, err)
	}
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cfg := s.Project.Config
	var last error
	for attempt := 0; attempt < maxWriteAttempts; attempt++ {
		out.Imported, out.Present, out.Kept = []string{}, []string{}, []string{}
		if err := s.Publisher.Sync(ctx); err != nil {
			return out, err
		}
		tip, _, err := s.Project.Git.Head(s.Project.Production())
		if err != nil {
			return out, err
		}
		paths := make([]string, len(keys))
		for i, k := range keys {
			paths[i] = cfg.AssetPath(k)
		}
		current := map[string]string{}
		if tip != "" {
			if current, err = s.Project.Git.Versions(tip, paths); err != nil {
				return out, err
			}
		}
		var changes []repo.Change
		for _, k := range keys {
			data, err := os.ReadFile(files[k])
			if err != nil {
				return out, errs.New(errs.Internal, "the legacy asset %s cannot be read: %v", files[k], err)
			}
			have := current[cfg.AssetPath(k)]
			switch {
			case have == plumbing.ComputeHash(plumbing.BlobObject, data).String():
				out.Present = append(out.Present, k)
			case have != "":
				out.Kept = append(out.Kept, k)
			default:
				out.Imported = append(out.Imported, k)
				changes = append(changes, repo.Change{Path: cfg.AssetPath(k), Content: data, Base: repo.MustNotExist})
			}
		}
		if len(changes) > 0 {
			msg := fmt.Sprintf("Import %d assets from the legacy store (.graft/assets)", len(changes))
			out.Commit, err = s.Drafts.CommitProduction(context.WithoutCancel(ctx), changes, msg, repo.Signature{Name: "graft", Email: "graft@graft.invalid"})
			if errs.Is(err, errs.ContentConflict) && out.Commit == "" {
				last = err
				continue // a key appeared meanwhile (or the checkout is dirty there): judge again
			}
			if err != nil && out.Commit == "" {
				return out, err
			}
		}
		moved := filepath.Join(s.Project.StateDir, legacyImportedName)
		for i := 2; ; i++ {
			if _, err := os.Lstat(moved); os.IsNotExist(err) {
				break
			}
			moved = filepath.Join(s.Project.StateDir, fmt.Sprintf("%s-%d", legacyImportedName, i))
		}
		if err := os.Rename(dir, moved); err != nil {
			return out, errs.New(errs.Internal, "the legacy asset store was imported but %s could not be renamed: %v", dir, err)
		}
		out.MovedTo = moved
		return out, nil
	}
	return out, last
}

// legacyAsset reads a key from the legacy store while it is not imported.
func (s *Service) legacyAsset(key string) (Asset, bool) {
	root, err := os.OpenRoot(s.legacyDir())
	if err != nil {
		return Asset{}, false
	}
	defer root.Close()
	data, err := root.ReadFile(filepath.FromSlash(key))
	if err != nil {
		return Asset{}, false
	}
	return Asset{Key: key, ContentType: AssetContentType(key), Version: plumbing.ComputeHash(plumbing.BlobObject, data).String(), Data: data}, true
}
