package mcp

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/graft-studio/graft/fixtures"
)

// syncBuffer is a log destination tests read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServiceLogsToServerLogger: what the project's service logs outside
// any result (a legacy asset store whose import a checkout with local
// changes refuses) goes to the server's Logger, where graft serve, the
// owner and graft mcp send the rest of their logs, not to slog.Default.
func TestServiceLogsToServerLogger(t *testing.T) {
	dir := fixtures.SampleRepo(t)
	for path, body := range map[string]string{
		".graft/assets/images/a.png": "legacy", // the legacy store
		"assets/images/a.png":        "local",  // a local file where the import writes
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var logged syncBuffer
	s := connect(t, Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	s.call("list_assets", map[string]any{}).ok(t)
	if !strings.Contains(logged.String(), "legacy asset store") || !strings.Contains(logged.String(), "level=WARN") {
		t.Errorf("the server's log holds no warning about the legacy store:\n%s", logged.String())
	}
}
