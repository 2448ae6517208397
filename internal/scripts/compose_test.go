package scripts

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/redistest"
)

// Every script, as composed, names only what it defines or Lua and Redis
// give it, and loads on both servers: a helper renamed in one place, or a
// library left out of a script's composition, fails here rather than in the
// first call that reaches it.
func TestEveryScriptComposes(t *testing.T) {
	all := All()
	seen := map[string]bool{}
	for _, s := range all {
		require.False(t, seen[s.Name()], "%s is listed twice", s.Name())
		seen[s.Name()] = true
		code := stripLua(s.Source())
		defined := localNames(code)
		for _, name := range calledNames(code) {
			assert.True(t, defined[name] || luaGlobals[name], "%s calls %s, which it does not define", s.Name(), name)
		}
		for _, name := range constantNames.FindAllString(code, -1) {
			assert.True(t, defined[name] || name == "KEYS" || name == "ARGV", "%s uses %s, which it does not define", s.Name(), name)
		}
	}
	files, err := luaFiles.ReadDir(".")
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".lua")
		if name != "lib" && !strings.HasSuffix(name, "_lib") {
			assert.True(t, seen[name], "%s.lua is no script that runs", name)
		}
	}

	redistest.Both(t, func(t *testing.T, srv *redistest.Server) {
		rdb := srv.Client(t)
		for _, s := range all {
			sha, err := rdb.ScriptLoad(context.Background(), s.Source()).Result()
			require.NoError(t, err, s.Name())
			assert.Equal(t, s.Hash(), sha, s.Name())
		}
	})
}

// luaGlobals are the globals the scripts may call: Lua's and Redis's.
var luaGlobals = map[string]bool{"tonumber": true, "tostring": true, "ipairs": true, "pairs": true,
	"type": true, "error": true, "select": true, "unpack": true, "pcall": true, "next": true}

var (
	localDef      = regexp.MustCompile(`\blocal\s+(?:function\s+)?([A-Za-z_][\w, \t]*)`)
	callSite      = regexp.MustCompile(`(^|[^\w.:])([A-Za-z_]\w*)\s*\(`)
	constantNames = regexp.MustCompile(`\b[A-Z][A-Z0-9_]+\b`)
	luaKeywords   = map[string]bool{"function": true, "if": true, "elseif": true, "while": true, "until": true,
		"return": true, "and": true, "or": true, "not": true, "in": true, "local": true}
)

// localNames returns the names code declares with local (functions,
// constants and variables alike).
func localNames(code string) map[string]bool {
	names := map[string]bool{}
	for _, m := range localDef.FindAllStringSubmatch(code, -1) {
		for _, n := range strings.Split(m[1], ",") {
			if f := strings.Fields(n); len(f) > 0 {
				names[f[0]] = true
			}
		}
	}
	return names
}

// calledNames returns the names code calls as functions, not as fields.
func calledNames(code string) []string {
	var out []string
	for _, m := range callSite.FindAllStringSubmatch(code, -1) {
		if !luaKeywords[m[2]] {
			out = append(out, m[2])
		}
	}
	return out
}

func TestStripLua(t *testing.T) {
	assert.Equal(t, "local a = '' \nf(\"\")\n", stripLua("local a = '-- x(' -- f(y)\nf(\"it's\")\n"))
	assert.Equal(t, []string{"f", "g"}, calledNames("f(x) redis.call('a') s:m() if g (y) then end"))
}

// No script carries a definition that its code never uses: each one
// prepended is named in the code (not a comment) of the script's file or of
// another definition it carries. A name mentioned only in a comment costs
// the server its definition on every call.
func TestNoScriptCarriesUnusedHelpers(t *testing.T) {
	var libs []definition
	files, err := luaFiles.ReadDir(".")
	require.NoError(t, err)
	for _, f := range files {
		if f.Name() == "lib.lua" || strings.HasSuffix(f.Name(), "_lib.lua") {
			libs = append(libs, definitions(f.Name(), read(f.Name()))...)
		}
	}
	for _, s := range All() {
		src := s.Source()
		for _, d := range libs {
			if !strings.Contains(src, d.text+"\n\n") {
				continue
			}
			rest := stripLua(strings.Replace(src, d.text, "", 1))
			assert.True(t, refersTo(rest, d.names), "%s carries %v, which its code never uses", s.Name(), d.names)
		}
	}
}
