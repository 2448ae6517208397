// Command dump writes each script as Redis runs it (the definitions it uses
// from the libraries, then its file) to a folder, one file per script, and
// lists each with its SHA1, as EVALSHA and SCRIPT EXISTS take it, and its
// size:
//
//	go run ./scripts/dump -out DIR
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/redcoord/redcoord/internal/scripts"
)

func main() {
	out := flag.String("out", "", "the folder to write the scripts to (made if missing)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/dump -out DIR")
		os.Exit(2)
	}
	if err := dump(*out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
}

// dump writes every script to dir as <name>.lua and lists it on list:
// its name, SHA1 and size in bytes.
func dump(dir string, list io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range scripts.All() {
		if err := os.WriteFile(filepath.Join(dir, s.Name()+".lua"), []byte(s.Source()), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(list, "%-16s %s %6d\n", s.Name(), s.Hash(), len(s.Source()))
	}
	return nil
}
