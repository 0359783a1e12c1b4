package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/bench"
	"github.com/graft-studio/graft/errs"
)

func (a *app) benchCommand() *cobra.Command {
	var (
		opt     bench.Options
		queries string
		verbose bool
		peerDir string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure compile, search and write speed on a fresh repository, beside SQLite FTS5; prints one JSON object",
		Long: `Build a corpus (--docs N synthetic documents of about 2.7 KB, or --corpus DIR of
Markdown files), commit it to a fresh repository in a temporary folder and measure:
full and incremental compile, query latency (a fixed mix of 200 queries, or
--queries FILE with one query per line) as p50, p90, p99 and max for words,
phrases, exclusions and prefixes, on each query's first run and warm, the same
queries on a branch three levels deep with 1% of documents overridden,
single-document writes, index size and peak memory. In the same run the same
documents go into a SQLite FTS5 table and the same queries are timed on it,
one after the other with graft's (--no-peer skips it). The result is one JSON
object on stdout.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opt.CorpusDir != "" && cmd.Flags().Changed("docs") {
				return usageError{fmt.Errorf("--docs and --corpus exclude each other")}
			}
			if peerDir != "" {
				// The FTS5 peer's child process (bench.ServePeer).
				return bench.ServePeer(cmd.Context(), opt, peerDir, a.stdin, a.stdout)
			}
			if exe, err := os.Executable(); err == nil && !opt.NoPeer {
				opt.PeerCommand = []string{exe, "bench", "--docs", strconv.Itoa(opt.Docs), "--fts5-peer-dir"}
				if opt.CorpusDir != "" {
					opt.PeerCommand = []string{exe, "bench", "--corpus", opt.CorpusDir, "--fts5-peer-dir"}
				}
			}
			if queries != "" {
				q, err := readQueries(queries)
				if err != nil {
					return err
				}
				opt.Queries = q
			}
			if verbose {
				opt.Log = func(format string, args ...any) { fmt.Fprintf(a.stderr, "bench: "+format+"\n", args...) }
			}
			res, err := bench.Run(cmd.Context(), opt)
			if err != nil {
				return err
			}
			line, err := jsonLine(res)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, line)
			return nil
		},
	}
	cmd.Flags().IntVar(&opt.Docs, "docs", 1000, "number of synthetic documents")
	cmd.Flags().StringVar(&opt.CorpusDir, "corpus", "", "a folder of Markdown files to use instead of synthetic documents")
	cmd.Flags().StringVar(&queries, "queries", "", "a file with one query per line (replaces the built-in mix)")
	cmd.Flags().StringVar(&opt.Dir, "keep", "", "build the repository in this (empty) folder and keep it")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log progress on stderr")
	cmd.Flags().BoolVar(&opt.NoPeer, "no-peer", false, "skip the SQLite FTS5 peer")
	cmd.Flags().StringVar(&opt.CPUProfile, "cpuprofile", "", "write a CPU profile (pprof) of the full compile to this file")
	cmd.Flags().StringVar(&peerDir, "fts5-peer-dir", "", "run as the FTS5 peer's child process over this folder (internal)")
	cmd.Flags().MarkHidden("fts5-peer-dir")
	return cmd
}

func readQueries(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, errs.New(errs.InputValidationFailed, "cannot read queries: %v", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if q := strings.TrimSpace(sc.Text()); q != "" && !strings.HasPrefix(q, "#") {
			out = append(out, q)
		}
	}
	if len(out) == 0 {
		return nil, errs.New(errs.InputValidationFailed, "%s holds no queries", name).WithFix("write one query per line")
	}
	return out, sc.Err()
}
