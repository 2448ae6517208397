package core

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every part of the schema is described, and no two parts can be taken
// for each other: a key names one part.
func TestSchemaWellFormed(t *testing.T) {
	types := []string{"hash", "zset", "list", "string", "stream", "channel"}
	kinds := []string{Rlock, Rfairlock, Rrwlock, Relection, Rsemaphore, Expirable, Rlatch, Ratelimit, AnyKind}
	seen := map[string]Part{}
	for p, k := range Schema() {
		assert.NotEmpty(t, k.Part, "part %d has no entry", p)
		assert.Contains(t, types, k.Type, "%s", k.Pattern())
		assert.NotEmpty(t, k.Kinds, "%s", k.Pattern())
		for _, kind := range k.Kinds {
			assert.Contains(t, kinds, kind, "%s", k.Pattern())
		}
		assert.NotEmpty(t, k.Doc, "%s", k.Pattern())
		assert.False(t, k.InUse && (k.IsChannel() || k.Client), "%s: only a name's key can be in use", k.Pattern())
		pattern := k.Pattern()
		if q, dup := seen[pattern]; dup {
			t.Errorf("parts %d and %d are both %s", q, p, pattern)
		}
		seen[pattern] = Part(p)
	}
}

// The key and channel builders follow the schema: "<prefix>:{<name>}:<part>",
// the tail after a colon, a Client's channels under the prefix alone.
func TestSchemaKeys(t *testing.T) {
	s := &Session{ID: "c1"}
	s.Config.Prefix = "rc"
	assert.Equal(t, "rc:{n}:lock", s.Key("n", KeyLock))
	assert.Equal(t, "rc:{n}:rel:c1", s.KeyTail("n", KeyMarkers, s.ID))
	assert.Equal(t, "rc:{n}:drained:", s.KeyTail("n", KeyDrained, ""))
	assert.Equal(t, "rc:{n}:wch", s.Key("n", ChanWritersClient), "the base a script follows with :<client id>")
	assert.Equal(t, "rc:{n}:ch", s.Channel("n"))
	assert.Equal(t, "rc:{n}:ch:c1", s.ClientChannel("n"))
	assert.Equal(t, "rc:ch:c1", s.ClientKey(ChanNotices, s.ID))
	assert.Equal(t, "rc:hub:probe", s.ClientKey(ChanProbe, ""))
	assert.Equal(t, []string{"rc:{n}:lock", "rc:{n}:waiters", "rc:{n}:queue", "rc:{n}:alive", "rc:{n}:readers",
		"rc:{n}:leases", "rc:{n}:writers", "rc:{n}:wwaiters", "rc:{n}:elect-alive"}, s.InUse("n"))
}

const (
	docsPath   = "../../docs/safety.md"
	tableBegin = "<!-- The table is made from internal/core/keys.go: TestDocsKeyTable prints it. -->\n"
	tableEnd   = "<!-- end of the table -->\n"
)

// docsTable returns the schema as the docs' Markdown table, between
// blank lines.
func docsTable() string {
	var b strings.Builder
	b.WriteString("\n| key or channel | type | used by | in use | content |\n|---|---|---|---|---|\n")
	for _, k := range Schema() {
		users := strings.Join(k.Kinds, ", ")
		if slices.Equal(k.Kinds, []string{AnyKind}) {
			users = "every Client"
		}
		inUse := ""
		if k.InUse {
			inUse = "yes"
		}
		b.WriteString("| `" + k.Pattern() + "` | " + k.Type + " | " + users + " | " + inUse + " | " + k.Doc + " |\n")
	}
	b.WriteString("\n")
	return b.String()
}

// The docs' key table is the schema's: a key added, renamed or dropped in
// keys.go fails this test, which prints the table to paste.
func TestDocsKeyTable(t *testing.T) {
	b, err := os.ReadFile(docsPath)
	require.NoError(t, err)
	doc := string(b)
	_, rest, ok := strings.Cut(doc, tableBegin)
	require.True(t, ok, "%s has no line %q", docsPath, tableBegin)
	table, _, ok := strings.Cut(rest, tableEnd)
	require.True(t, ok, "%s has no line %q", docsPath, tableEnd)
	if want := docsTable(); table != want {
		t.Errorf("the key table of %s differs from internal/core/keys.go; between its markers it should read:\n%s", docsPath, want)
	}
}
