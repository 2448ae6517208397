package errs

import (
	"errors"
	"regexp"
	"strings"
)

// A Need is a command the library needs the server to allow: how the
// warnings and errors name it, what stops working without it, and what to
// do. The server check (internal/core) probes each; docs/operating.md
// lists them in the same order.
type Need struct {
	Command string // as the server names it in a refusal, lower-case: "time", "script|load"
	Name    string // as a message names it: "TIME inside a script"
	Breaks  string // what stops working without it
	Fix     string // what to do
}

// needs is the table; it is never written.
var needs = [...]Need{
	{"evalsha", "EVALSHA", "every operation fails: each runs its script by SHA1",
		"grant +evalsha to this user"},
	{"script|load", "SCRIPT LOAD", "an operation whose script the server lacks (after a restart, " +
		"a failover or SCRIPT FLUSH) fails: scripts are loaded with SCRIPT LOAD",
		"grant +script|load to this user"},
	{"time", "TIME inside a script", "every operation fails: every script reads the server's clock",
		"grant +time to this user; a managed service that refuses TIME in scripts is not supported"},
	{"publish", "PUBLISH inside a script", "waiters are not woken: each sees a release only " +
		"at its next poll (WithPollInterval)", "grant +publish and the channels under the key prefix " +
		"(&<prefix>:*) to this user"},
	{"spublish", "SPUBLISH inside a script", "waiters are not woken: each sees a release only " +
		"at its next poll (WithPollInterval)", "grant +spublish and the channels under the key prefix " +
		"(&<prefix>:*) to this user"},
	{"subscribe", "SUBSCRIBE", "waits poll instead of being woken: each sees a release only at " +
		"its next poll (WithPollInterval)", "grant +subscribe and the channels under the key prefix " +
		"(&<prefix>:*) to this user, or use WithPolling"},
	{"ssubscribe", "SSUBSCRIBE", "waits poll instead of being woken: each sees a release only at " +
		"its next poll (WithPollInterval)", "grant +ssubscribe and the channels under the key prefix " +
		"(&<prefix>:*) to this user, or use WithPolling"},
	{"xadd", "XADD inside a script", "relection's campaigns fail: a new leader is written to " +
		"the election's log (other primitives do not need XADD)", "grant +xadd to this user"},
	{"wait", "WAIT", "with WithWaitReplicas, every acquire fails (and is undone), and every " +
		"release reports ErrNotReplicated", "grant +wait to this user, or leave out WithWaitReplicas"},
}

// Needs returns the table of commands the library needs, in its order.
func Needs() []Need { n := needs; return n[:] }

// NeedOf returns the Need of command, as Refusal returns it; for a command
// the table does not list, one that names it in upper case.
func NeedOf(command string) Need {
	for _, n := range needs {
		if n.Command == command {
			return n
		}
	}
	return Need{Command: command, Name: strings.ToUpper(strings.ReplaceAll(command, "|", " "))}
}

// namedCommand finds the command a refusal names: Redis's ACL replies
// ("... no permissions to run the 'time' command", inside a script since
// Redis 7.2 too) and its reply to a command it does not know (disabled or
// renamed).
var namedCommand = regexp.MustCompile(`(?i)(?:no permissions to run the|^ERR unknown command) '([^']+)'`)

// unnamedRefusals are the words of refusals that name no command: any
// other ACL denial (NOPERM of a key or channel), and Redis 7.0's replies
// to a command refused or unknown inside a script.
var unnamedRefusals = []string{"noperm ", "acl failure in script", "the user executing the script can't",
	"unknown redis command called from script"}

// ownErrors are the words that start the scripts' own errors (see
// check_kind and next_token in lib.lua). They name a key, and so the
// user's name, which may hold a refusal's words: a reply with them is no
// refusal.
var ownErrors = []string{"WRONGTYPE ", "ERR fence "}

// Refusal reports whether err is the server refusing a command: an ACL
// that denies it, or a command the server does not know. It returns the
// command, lower-case ("time", "script|load"), or "" when the reply does
// not say which (Redis 7.0 names no command refused inside a script). Only
// a reply of the server is a refusal: an error of the client's own with
// those words is not.
func Refusal(err error) (command string, ok bool) {
	var reply interface {
		error
		RedisError()
	}
	if !errors.As(err, &reply) {
		return "", false
	}
	return RefusalReply(reply.Error())
}

// RefusalReply is Refusal for a reply of the server given as its words:
// the error that a script's redis.pcall returns.
func RefusalReply(msg string) (command string, ok bool) {
	for _, w := range ownErrors {
		if strings.Contains(msg, w) {
			return "", false
		}
	}
	if m := namedCommand.FindStringSubmatch(msg); m != nil {
		return strings.ToLower(m[1]), true
	}
	lower := strings.ToLower(msg)
	for _, w := range unnamedRefusals {
		if strings.Contains(lower, w) {
			return "", true
		}
	}
	return "", false
}

// Refused returns the error of operation op that the server's refusal of
// command (as Refusal returns it, "" for one it does not know) made fail:
// it matches ErrRefused and wraps cause, whose words it gives without the
// script's location that Redis appends ("script: <sha>, on
// @user_script:1."):
//
//	redcoord: refused by the server: acquire: TIME inside a script: <the server's reply>
func Refused(op, command string, cause error) *Error {
	what := "a call inside the script"
	if command != "" {
		what = NeedOf(command).Name
	}
	return &Error{Sentinel: ErrRefused, Op: op, Detail: what, Cause: unlocated(cause)}
}

// unlocated returns err worded without the script's location that Redis
// appends to an error raised inside a script; err itself when it has none.
func unlocated(err error) error {
	msg := err.Error()
	i := strings.Index(msg, " script: ")
	if i < 0 {
		return err
	}
	return &located{err: err, words: strings.TrimSpace(msg[:i])}
}

// located is an error of Redis worded without its script's location; it
// unwraps to the error itself.
type located struct {
	err   error
	words string
}

func (l *located) Error() string { return l.words }
func (l *located) Unwrap() error { return l.err }
