package errs

import (
	"errors"
	"fmt"
	"testing"
)

// reply is an error reply of the server, as go-redis's are.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

// Refusal tells the server's refusals, in the words of each Redis version,
// from its other replies and from the client's own errors, and names the
// command where the reply does.
func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		err     error
		command string
		ok      bool
	}{
		{reply("NOPERM this user has no permissions to run the 'evalsha' command"), "evalsha", true},
		{reply("NOPERM User u has no permissions to run the 'script|load' command"), "script|load", true},
		{fmt.Errorf("loading: %w", reply("NOPERM this user has no permissions to run the 'script|load' command")),
			"script|load", true},
		{reply("ERR ACL failure in script: User u has no permissions to run the 'time' command script: f, on " +
			"@user_script:1."), "time", true},
		{reply("ERR The user executing the script can't run this command or subcommand script: f, on " +
			"@user_script:1."), "", true},
		{reply("ERR The user executing the script can't publish to the channel mentioned in the command"), "", true},
		{reply("NOPERM this user has no permissions to access one of the keys used as arguments"), "", true},
		{reply("ERR unknown command 'XADD', with args beginning with: 'k'"), "xadd", true},
		{reply("ERR Unknown Redis command called from script script: f, on @user_script:1."), "", true},
		{reply("WRONGTYPE Operation against a key holding the wrong kind of value"), "", false},
		{reply("NOSCRIPT No matching script. Please use EVAL."), "", false},
		{errors.New("NOPERM this user has no permissions to run the 'time' command"), "", false},
		{nil, "", false},
	} {
		command, ok := Refusal(c.err)
		if command != c.command || ok != c.ok {
			t.Errorf("Refusal(%v) = %q, %v; want %q, %v", c.err, command, ok, c.command, c.ok)
		}
	}
}

// Refused names the operation and the command, matches ErrRefused, words
// the reply without the script's location, and keeps the reply for
// errors.As and errors.Is.
func TestRefused(t *testing.T) {
	r := reply("ERR The user executing the script can't run this command or subcommand script: f, on @user_script:1.")
	for _, c := range []struct {
		command, want string
	}{
		{"time", "redcoord: refused by the server: acquire: TIME inside a script: " +
			"ERR The user executing the script can't run this command or subcommand"},
		{"", "redcoord: refused by the server: acquire: a call inside the script: " +
			"ERR The user executing the script can't run this command or subcommand"},
		{"hset", "redcoord: refused by the server: acquire: HSET: " +
			"ERR The user executing the script can't run this command or subcommand"},
	} {
		err := About("rlock", "x", Refused("acquire", c.command, r))
		if got := Refused("acquire", c.command, r).Error(); got != c.want {
			t.Errorf("got %q\nwant %q", got, c.want)
		}
		var back reply
		if !errors.Is(err, ErrRefused) || !errors.As(err, &back) || back != r || !errors.Is(err, r) {
			t.Errorf("%v: does not match ErrRefused and the reply", err)
		}
	}
	plain := reply("NOPERM this user has no permissions to run the 'evalsha' command")
	if got, want := Refused("release", "evalsha", plain).Error(),
		"redcoord: refused by the server: release: EVALSHA: "+string(plain); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
