// Command graft is the CLI of graft, a Git-native content service: it
// initialises projects, reads and writes content, checks it, and serves it.
// Run `graft --help` for the commands.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
