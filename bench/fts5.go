package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the FTS5 peer's database

	"github.com/graft-studio/graft/index"
	"github.com/graft-studio/graft/repo"
)

// The FTS5 peer: the same documents in a SQLite FTS5 table (modernc.org's
// pure-Go SQLite, the driver graft's state store uses), searched with the
// same queries in the same run, so that both are measured on the same
// machine at the same moment. It stands for what an application would do
// with SQLite alone: each document's title, other frontmatter strings and
// Markdown body in three columns under the unicode61 tokenizer (which, like
// graft's neutral analyzer, lower-cases Unicode words and drops nothing),
// and for each query the ten best rows by FTS5's bm25 with a snippet.

// fts5 is the peer's open database.
type fts5 struct {
	db   *sql.DB
	path string
}

// ftsBatch is the number of rows per insert transaction.
const ftsBatch = 2000

// buildFTS5 creates the peer's database in dir and indexes every document
// of the corpus: parsed as graft parses it (frontmatter and body), inserted
// in transactions of ftsBatch rows, then merged into one b-tree ('optimize',
// as graft's full build ends with merged segments).
func buildFTS5(ctx context.Context, dir string, src *source) (*fts5, int, error) {
	path := filepath.Join(dir, "fts5.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, 0, err
	}
	db.SetMaxOpenConns(1)
	p := &fts5{db: db, path: path}
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, title, meta, body, tokenize = 'unicode61')`); err != nil {
		db.Close()
		return nil, 0, err
	}
	rows := 0
	for start := 0; start < len(src.paths); start += ftsBatch {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			db.Close()
			return nil, 0, err
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO docs(path, title, meta, body) VALUES (?, ?, ?, ?)`)
		if err != nil {
			tx.Rollback()
			db.Close()
			return nil, 0, err
		}
		for i := start; i < min(start+ftsBatch, len(src.paths)); i++ {
			raw, err := src.read(i, 0)
			if err != nil {
				tx.Rollback()
				db.Close()
				return nil, 0, err
			}
			doc, err := repo.ParseDocument(raw)
			if err != nil {
				continue // graft reports it as a problem and indexes nothing
			}
			title, _ := doc.Data["title"].(string)
			if _, err := ins.ExecContext(ctx, src.paths[i], title, metaText(doc.Data), string(doc.Body)); err != nil {
				tx.Rollback()
				db.Close()
				return nil, 0, err
			}
			rows++
		}
		if err := tx.Commit(); err != nil {
			db.Close()
			return nil, 0, err
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO docs(docs) VALUES ('optimize')`); err != nil {
		db.Close()
		return nil, 0, err
	}
	return p, rows, nil
}

// metaText joins the frontmatter's strings other than the title, keys sorted.
func metaText(data map[string]any) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		if k != "title" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			b.WriteString(t)
			b.WriteByte(' ')
		case []any:
			for _, e := range t {
				walk(e)
			}
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		default:
			fmt.Fprint(&b, t, " ")
		}
	}
	for _, k := range keys {
		walk(data[k])
	}
	return b.String()
}

// search runs one query: the ten best rows with a snippet of the body.
func (p *fts5) search(ctx context.Context, match string) error {
	if match == "" {
		return nil // nothing FTS5 can search (a query of exclusions only)
	}
	rows, err := p.db.QueryContext(ctx, `SELECT path, snippet(docs, 3, '<b>', '</b>', '…', 20) FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 10`, match)
	if err != nil {
		return fmt.Errorf("fts5 %q: %w", match, err)
	}
	defer rows.Close()
	for rows.Next() {
		var path, snippet string
		if err := rows.Scan(&path, &snippet); err != nil {
			return err
		}
	}
	return rows.Err()
}

// reopen closes the database and opens it again, so the first runs of the
// queries start with an empty SQLite page cache (as graft's first runs
// start with empty result and text caches).
func (p *fts5) reopen() error {
	if err := p.db.Close(); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+p.path)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	p.db = db
	return nil
}

func (p *fts5) size() int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(p.path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func (p *fts5) close() error { return p.db.Close() }

// ftsMatch translates a query of graft's language into an FTS5 MATCH
// expression: words and phrases as FTS5 strings ANDed, "or" between groups,
// exclusions as NOT, a prefix as "word" *, and a field filter as a column
// filter on the frontmatter column (the collection filter is dropped: the
// peer has one table). "" when nothing is left to search.
func ftsMatch(q string) string {
	pq, err := index.ParseQuery(q)
	if err != nil {
		return ""
	}
	var groups []string
	for _, g := range pq.Groups {
		var pos, neg []string
		for _, c := range g {
			var s string
			switch {
			case c.Kind == index.Filter && c.Field == "collection":
				continue
			case c.Kind == index.Filter:
				s = "meta : " + ftsString(c.Text)
			default:
				s = ftsString(c.Text)
			}
			if c.Prefix {
				s += " *"
			}
			if c.Negate {
				neg = append(neg, s)
			} else {
				pos = append(pos, s)
			}
		}
		if len(pos) == 0 {
			continue
		}
		expr := "(" + strings.Join(pos, " AND ") + ")"
		for _, n := range neg {
			expr += " NOT (" + n + ")"
		}
		groups = append(groups, expr)
	}
	return strings.Join(groups, " OR ")
}

// ftsString quotes text as an FTS5 string (a phrase when it holds several
// words).
func ftsString(text string) string {
	return `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
}

// timeFTS5 runs the queries once each and returns their times.
func (p *fts5) run(ctx context.Context, queries []string) ([]time.Duration, error) {
	lat := make([]time.Duration, len(queries))
	for i, q := range queries {
		start := time.Now()
		if err := p.search(ctx, ftsMatch(q)); err != nil {
			return nil, err
		}
		lat[i] = time.Since(start)
	}
	return lat, nil
}
