package scripts

import "time"

// FenceTTL is how long a fence hash lives after the last token handed out
// from it: FENCE_TTL_MS in lib.lua, where next_token explains why a token
// handed out after the fence expired is still above every earlier one.
// TestFenceTTL checks that the two agree.
const FenceTTL = 24 * time.Hour
