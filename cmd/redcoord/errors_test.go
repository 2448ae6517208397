package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/rlock"
)

// Mistakes in the command line: exit status 2, and a message naming the
// argument.
func TestUsage(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"inspect"}, "usage: redcoord [flags] inspect NAME"},
		{[]string{"inspect", "a", "b"}, "usage: redcoord [flags] inspect NAME"},
		{[]string{"-count", "0", "ls"}, "-count: must be at least 1"},
		{[]string{"ls", "-interval", "1ms"}, "-interval: must be at least 10ms"},
		{[]string{"-cert", "x.pem", "ls"}, "-cert and -key: give both or neither"},
		{[]string{"-redis", "a:1,b:2", "ls"}, "several addresses need -cluster or -sentinel"},
		{[]string{"-redis", "nohostport", "ls"}, `"nohostport" is not host:port`},
		{[]string{"-prefix", "a{b", "ls"}, "-prefix: must be non-empty and contain no brace"},
		{[]string{"-nosuchflag", "ls"}, "flag provided but not defined: -nosuchflag"},
		{[]string{"-cacert", "/nonexistent.pem", "ls"}, "-cacert: open /nonexistent.pem"},
		{[]string{"-cacert", junk, "ls"}, "holds no PEM certificate"},
	} {
		r := cli(t, "", tc.args...).wantCode(t, exitError)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: stderr does not say %q:\n%s", tc.args, tc.want, r.stderr)
		}
	}
}

// An unreachable server, a name or pattern with a brace, a key of another
// type and a command the ACL refuses: exit status 2, each named.
func TestErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	r := cli(t, "", "-redis", closed, "-timeout", "2s", "ls").wantCode(t, exitError)
	if !strings.Contains(r.stderr, "cannot reach Redis at "+closed) || !strings.Contains(r.stderr, "refused") {
		t.Errorf("stderr: %s", r.stderr)
	}

	srv := redistest.Real(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	addr := []string{"-redis", srv.Addr}
	r = cli(t, "", append(addr, "inspect", "a{b}")...).wantCode(t, exitError)
	if !strings.Contains(r.stderr, "NAME") || !strings.Contains(r.stderr, "brace") {
		t.Errorf("stderr: %s", r.stderr)
	}
	r = cli(t, "", append(addr, "ls", "{x")...).wantCode(t, exitError)
	if !strings.Contains(r.stderr, "PATTERN") {
		t.Errorf("stderr: %s", r.stderr)
	}

	rdb.Set(ctx, "rc:{odd}:lock", "a string", 0)
	want := "rc:{odd}:lock holds another type of value than the hash redcoord keeps there"
	r = cli(t, "", append(addr, "inspect", "odd")...).wantCode(t, exitError)
	if !strings.Contains(r.stderr, want) {
		t.Errorf("inspect: stderr: %s", r.stderr)
	}
	r = cli(t, "", append(addr, "ls")...).wantCode(t, exitError)
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, "odd") {
		t.Errorf("ls: stdout:\n%s\nstderr: %s", r.stdout, r.stderr)
	}
	rdb.Del(ctx, "rc:{odd}:lock")

	c := newClient(t, rdb)
	if err := rlock.New(c, "orders:3").Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "ACL", "SETUSER", "noscan", "on", ">pw", "~*", "+@all", "-scan").Err(); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "", append(addr, "-user", "noscan", "-password", "pw", "ls")...).wantCode(t, exitError)
	if !strings.Contains(r.stderr, "NOPERM") || !strings.Contains(r.stderr, "scan") ||
		!strings.Contains(r.stderr, "ACL refuses") {
		t.Errorf("stderr: %s", r.stderr)
	}
	// What docs/cli.md says ls and inspect need is enough.
	if err := rdb.Do(ctx, "ACL", "SETUSER", "reader", "on", ">pw", "~*", "+@read", "+scan", "+time", "+ping").Err(); err != nil {
		t.Fatal(err)
	}
	cli(t, "", append(addr, "-user", "reader", "-password", "pw", "ls")...).wantCode(t, exitOK)
	cli(t, "", append(addr, "-user", "reader", "-password", "pw", "inspect", "orders:3")...).wantCode(t, exitOK)
	t.Setenv("REDISCLI_AUTH", "wrong")
	r = cli(t, "", append(addr, "-user", "noscan", "ls")...).wantCode(t, exitError)
	if !strings.Contains(r.stderr, "WRONGPASS") || !strings.Contains(r.stderr, "-password") {
		t.Errorf("stderr: %s", r.stderr)
	}
	t.Setenv("REDISCLI_AUTH", "pw")
	r = cli(t, "", append(addr, "-user", "noscan", "inspect", "orders:3")...).wantCode(t, exitOK)
	if !strings.Contains(r.stdout, "rlock") {
		t.Errorf("stdout: %s", r.stdout)
	}
}

// -h prints the usage and exits 0.
func TestHelp(t *testing.T) {
	r := cli(t, "", "-h").wantCode(t, exitOK)
	if !strings.Contains(r.stderr, "usage: redcoord [flags] COMMAND") || !strings.Contains(r.stderr, "-sentinel master") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

// A mistake in a command's flags prints the usage; the password given
// before the command is no flag's default there, and is not printed.
func TestUsageHidesThePassword(t *testing.T) {
	for _, args := range [][]string{
		{"-password", "s3cret", "ls", "-bogus"},
		{"-password", "s3cret", "inspect", "-h"},
	} {
		r := cli(t, "", args...)
		if strings.Contains(r.stderr+r.stdout, "s3cret") {
			t.Errorf("%v prints the password:\n%s", args, r.stderr)
		}
	}
}

// A URL given to -redis, as redis-cli -u takes one, is a usage error that
// says what to give instead, without echoing the password in it.
func TestRedisURLIsUsage(t *testing.T) {
	r := cli(t, "", "-redis", "redis://:s3cret@127.0.0.1:1", "-timeout", "1s", "ls").wantCode(t, exitError)
	if strings.Contains(r.stderr, "s3cret") || !strings.Contains(r.stderr, "-password") {
		t.Errorf("stderr: %s", r.stderr)
	}
}
