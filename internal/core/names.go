package core

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redcoord/redcoord/internal/errs"
)

// MaxNameLen bounds a primitive's name, in bytes.
const MaxNameLen = 512

// CheckName reports why name cannot name a primitive: empty, longer than
// MaxNameLen, not UTF-8, or containing a brace (braces would break the
// {name} hash tag that keeps every key of a primitive in one Cluster slot).
func CheckName(name string) error { return CheckNamed("name", name) }

// CheckNamed is CheckName for a name passed as the argument arg
// ("names[2]").
func CheckNamed(arg, name string) error {
	switch {
	case name == "":
		return errs.Invalid(arg, "must not be empty")
	case len(name) > MaxNameLen:
		return errs.Invalid(arg, "%d bytes, at most %d", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return errs.Invalid(arg, "not valid UTF-8")
	case strings.ContainsAny(name, "{}"):
		return errs.Invalid(arg, "%q contains a brace", name)
	}
	return nil
}

// CheckLease reports why d cannot be a lease: not positive, or not a whole
// number of milliseconds of at least 1ms (Redis keeps leases in ms).
func CheckLease(arg string, d time.Duration) error {
	if d < time.Millisecond {
		return errs.Invalid(arg, "must be at least 1ms, got %v", d)
	}
	return nil
}
