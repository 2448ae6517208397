package scripts

import (
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// functionDef matches the definitions of a named function: "local function
// f(", "function f(" and "local f = function(".
var functionDef = regexp.MustCompile(`(?m)^[ \t]*(?:local[ \t]+function[ \t]+([A-Za-z_]\w*)|function[ \t]+([A-Za-z_][\w.:]*)|local[ \t]+([A-Za-z_]\w*)[ \t]*=[ \t]*function\b)`)

// libraryLocal matches a library's top-level locals (its constants).
var libraryLocal = regexp.MustCompile(`(?m)^local[ \t]+([A-Za-z_][\w, \t]*?)[ \t]*=`)

// duplicates returns each name defined more than once across files (file
// name -> source), with where: every function anywhere, and the top-level
// locals of the libraries (lib.lua, *_lib.lua), which every script that
// uses them shares.
func duplicates(files map[string]string) map[string][]string {
	where := map[string][]string{}
	for file, src := range files {
		defined := map[string]int{}
		for _, m := range functionDef.FindAllStringSubmatch(src, -1) {
			defined[m[1]+m[2]+m[3]]++
		}
		if file == "lib.lua" || strings.HasSuffix(file, "_lib.lua") {
			for _, m := range libraryLocal.FindAllStringSubmatch(src, -1) {
				for _, name := range strings.Split(m[1], ",") {
					if name = strings.TrimSpace(name); defined[name] == 0 {
						defined[name] = 1
					}
				}
			}
		}
		for name, n := range defined {
			for range n {
				where[name] = append(where[name], file)
			}
		}
	}
	for name, files := range where {
		if len(files) < 2 {
			delete(where, name)
		} else {
			sort.Strings(files)
		}
	}
	return where
}

// Each helper has one definition in the folder: a reader who greps a name
// finds one body, and no script's meaning depends on which library comes
// last.
func TestOneDefinitionPerName(t *testing.T) {
	files := map[string]string{}
	names, err := fs.Glob(FS, "*.lua")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, name := range names {
		b, err := FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	for name, where := range duplicates(files) {
		t.Errorf("%s is defined more than once: in %s", name, strings.Join(where, ", "))
	}
}

func TestDuplicatesFindsEachForm(t *testing.T) {
	got := duplicates(map[string]string{
		"a_lib.lua": "local K = 1\n\nlocal function f()\nend\n\nlocal g = function() end\n\nfunction h() end\n",
		"b_lib.lua": "local X, K = 2, 3\n\nlocal function f(x)\n  local g = function() end\nend\n\nfunction h() end\n",
		"op.lua":    "local K = 4\nlocal x = 1\n",
	})
	want := map[string][]string{
		"K": {"a_lib.lua", "b_lib.lua"}, "f": {"a_lib.lua", "b_lib.lua"},
		"g": {"a_lib.lua", "b_lib.lua"}, "h": {"a_lib.lua", "b_lib.lua"},
	}
	if len(got) != len(want) {
		t.Fatalf("duplicates = %v, want %v", got, want)
	}
	for name, files := range want {
		if strings.Join(got[name], " ") != strings.Join(files, " ") {
			t.Errorf("%s: %v, want %v", name, got[name], files)
		}
	}
}
