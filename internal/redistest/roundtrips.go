package redistest

import "github.com/redcoord/redcoord/internal/roundtrip"

// RoundTrips is [roundtrip.Counter], a go-redis hook that counts round trips;
// the tests name it here, beside the servers it counts on.
type RoundTrips = roundtrip.Counter
