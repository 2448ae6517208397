package scripts

import "time"

// FenceTTL is the TTL a fence hash is given when a token is handed out from
// it, at most once an hour, so that it lives at least a day after its last
// token: FENCE_TTL_MS in lib.lua, where next_token explains why a token
// handed out after the fence expired is still above every earlier one.
// TestFenceTTL checks that the two agree.
const FenceTTL = 25 * time.Hour
