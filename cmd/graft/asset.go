package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/graft-studio/graft/service"
)

func (a *app) assetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "asset",
		Short: "Store images and files as assets: files in Git under assets.dir, committed to your draft",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.assetPutCommand())
	return cmd
}

func (a *app) assetPutCommand() *cobra.Command {
	var in service.PutAssetInput
	cmd := &cobra.Command{
		Use:   "put FILE [KEY]",
		Short: "Commit FILE to your draft as the asset KEY (default: the file's name)",
		Long: `Commit FILE to your draft as the asset KEY, the file assets.dir/KEY (graft.yaml's
assets.dir, default assets): lower-case segments of a-z, 0-9, '.', '_' and '-'
joined by '/'. Without KEY the key is the slugified file name. An existing key
is refused (ASSET_EXISTS) unless --overwrite is given. Publish it with
graft drafts publish, or together with a document that names it.`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			data, err := os.ReadFile(argv[0])
			if err != nil {
				return usageError{fmt.Errorf("cannot read %s: %v", argv[0], err)}
			}
			if data == nil {
				data = []byte{}
			}
			in.Data = data
			in.Key = service.DefaultAssetKey(filepath.Base(argv[0]))
			if len(argv) == 2 {
				in.Key = argv[1]
			}
			s, caller, err := a.open()
			if err != nil {
				return err
			}
			defer s.Close()
			out, err := s.PutAsset(cmd.Context(), caller, in)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			verb := "stored"
			if !out.Created {
				verb = "replaced"
			}
			fmt.Fprintf(a.stdout, "%s %s (%d bytes, %s) as %s on %s\n", verb, out.Key, out.Size, out.ContentType, out.Path, out.Branch)
			return nil
		},
	}
	cmd.Flags().BoolVar(&in.Overwrite, "overwrite", false, "replace an existing key")
	cmd.Flags().StringVar(&in.Alt, "alt", "", "alternative text")
	a.jsonFlag(cmd)
	return cmd
}
