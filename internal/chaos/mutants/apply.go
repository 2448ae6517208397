//go:build mutants

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A mutant is one small deliberate bug: in File (a path from the
// repository's root), the text Old, which must occur exactly once, is
// replaced by New.
type mutant struct {
	Name   string // unique, kebab-case: what it does, where
	File   string
	Old    string
	New    string
	Breaks string // the guard it removes, and what a user would see
	// Prims are the chaos suite's primitives that exercise File (see
	// primitives); nil runs them all.
	Prims []string
}

// primitives are the names of TestChaos's subtests (prim_test.go).
var primitives = []string{"rlock", "rfairlock", "rrwlock", "multi", "redlock", "relection", "xsemaphore", "semaphore"}

// errNoApply is a mutant whose Old text is missing from its file, or
// found more than once: the file changed since the mutant was written,
// and the mutant needs updating.
type errNoApply struct {
	file  string
	count int
}

func (e errNoApply) Error() string {
	if e.count == 0 {
		return fmt.Sprintf("old text not found in %s (the file changed: update the mutant)", e.file)
	}
	return fmt.Sprintf("old text found %d times in %s (make it unique)", e.count, e.file)
}

// copyTree copies the files git knows in root (tracked, and untracked
// ones not ignored, as they are in the working tree) to dir.
func copyTree(root, dir string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("listing %s: %w", root, err)
	}
	seen := map[string]bool{}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if rel == "" || seen[rel] {
			continue
		}
		seen[rel] = true
		if err := copyFile(filepath.Join(root, rel), filepath.Join(dir, rel)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies one file, or symbolic link; a file deleted from the
// working tree but still in the index is skipped.
func copyFile(from, to string) error {
	fi, err := os.Lstat(from)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	case !fi.Mode().IsRegular():
		return nil // a submodule's folder, a socket: nothing a build reads
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// apply plants m in the copy at dir.
func apply(dir string, m mutant) error {
	path := filepath.Join(dir, filepath.FromSlash(m.File))
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return errNoApply{file: m.File}
	} else if err != nil {
		return err
	}
	if n := bytes.Count(data, []byte(m.Old)); n != 1 {
		return errNoApply{file: m.File, count: n}
	}
	return os.WriteFile(path, bytes.Replace(data, []byte(m.Old), []byte(m.New), 1), 0o644)
}

// pkgOf returns the package whose tests exercise m's file: its own
// folder's, or for a script (scripts/*.lua, embedded by package scripts)
// internal/scripts, whose typed wrappers' tests run the scripts.
func pkgOf(m mutant) string {
	if strings.HasSuffix(m.File, ".lua") {
		return "./internal/scripts/"
	}
	return "./" + filepath.ToSlash(filepath.Dir(m.File)) + "/"
}
