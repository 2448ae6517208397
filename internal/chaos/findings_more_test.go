package chaos

import "strings"

// moreKnown names the finding a violation matches among those the checkers
// of beliefs (history_test.go) and of stranded waiters (stranded_test.go)
// brought to light, when known does not; "" if none.
func moreKnown(v violation) string {
	switch v.check {
	case "exclusivity", "counts":
		if strings.Contains(v.msg, "(its Unlock in flight since") {
			return "a hold's Context stays live while its last Unlock is in flight"
		}
	}
	return ""
}
