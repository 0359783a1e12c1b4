package drafts_test

import (
	"testing"

	"github.com/graft-studio/graft/drafts"
	"github.com/graft-studio/graft/drafts/publishertest"
	"github.com/graft-studio/graft/repo"
)

func TestLocalPublisher(t *testing.T) {
	publishertest.Run(t, func(t *testing.T) (drafts.Publisher, *repo.Repo) {
		r, err := repo.InitRepo(t.TempDir(), true)
		if err != nil {
			t.Fatal(err)
		}
		publishertest.SeedRepo(t, r)
		return drafts.NewLocal(r), r
	})
}
