package redistest

import (
	"fmt"
	"os"
	"testing"
)

// ServerEnv is the environment variable that chooses the server every
// helper here starts: "redis" (or unset) for redis-server and redis-cli,
// "valkey" for valkey-server and valkey-cli. Sentinels are the same binary
// with --sentinel, for both.
const ServerEnv = "REDCOORD_SERVER"

// family is one server the helpers can start: its binaries and the Debian
// packages that install them.
type family struct {
	name      string // ServerEnv's value
	server    string // the server binary
	serverPkg string // the package that installs it
	cli       string // the command-line client that creates clusters
	cliPkg    string // the package that installs it
}

// families are the servers ServerEnv may name; the first is the default.
var families = [...]family{
	{name: "redis", server: "redis-server", serverPkg: "redis-server", cli: "redis-cli", cliPkg: "redis-tools"},
	{name: "valkey", server: "valkey-server", serverPkg: "valkey-server", cli: "valkey-cli", cliPkg: "valkey-tools"},
}

// chosenFamily returns the family ServerEnv names, or an error naming the
// variable, its value and the values it may take.
func chosenFamily() (family, error) {
	v := os.Getenv(ServerEnv)
	if v == "" {
		return families[0], nil
	}
	for _, f := range families {
		if f.name == v {
			return f, nil
		}
	}
	return family{}, fmt.Errorf("redistest: %s=%q: want redis (the default) or valkey", ServerEnv, v)
}

// chosen is chosenFamily for a test: an unknown value is a t.Fatal.
func chosen(t testing.TB) family {
	t.Helper()
	f, err := chosenFamily()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return f
}

// ServerName returns the name of the server binary the helpers start,
// "redis-server" or "valkey-server" as [ServerEnv] chooses; an unknown
// value of the variable is a t.Fatal. [Both] names its real subtest so.
func ServerName(t testing.TB) string {
	t.Helper()
	return chosen(t).server
}

// serverBin returns the path of the chosen server binary, or calls t.Skip
// (t.Fatal when CI is set) as lookBin does.
func serverBin(t testing.TB) (string, family) {
	t.Helper()
	f := chosen(t)
	return lookBin(t, f.server, f.serverPkg), f
}
