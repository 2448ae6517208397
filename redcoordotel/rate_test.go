package redcoordotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/redcoordotel"
)

// A rate limiter's events count its events by outcome, and its Waits'
// sleeps go to a histogram of their own.
func TestRateEvents(t *testing.T) {
	ctx := context.Background()
	mp, reader := meter(t)
	obs, err := redcoordotel.Observer(mp, nil)
	require.NoError(t, err)

	ev := func(k redcoord.EventKind, n int, wait time.Duration, slept bool, err error) {
		obs(redcoord.Event{Kind: k, Primitive: "rratelimit", Name: "api", Count: n, Wait: wait, Waited: slept, Err: err, Context: ctx})
	}
	ev(redcoord.RateAdmitted, 3, 0, false, nil)
	ev(redcoord.RateWaited, 2, 40*time.Millisecond, true, nil)
	ev(redcoord.RateRefused, 1, 100*time.Millisecond, false, nil)                          // an Allow over the limit
	ev(redcoord.RateRefused, 1, time.Second, false, context.DeadlineExceeded)              // a Wait refused at once
	ev(redcoord.RateRefused, 1, 20*time.Millisecond, true, errors.New("context canceled")) // a Wait ended while it slept

	got := collect(t, reader)
	events := got["redcoord.rate.events"].(metricdata.Sum[int64])
	counts := map[string]int64{}
	for _, dp := range events.DataPoints {
		o, _ := dp.Attributes.Value(attribute.Key("outcome"))
		p, _ := dp.Attributes.Value(attribute.Key("primitive"))
		assert.Equal(t, "rratelimit", p.AsString())
		counts[o.AsString()] = dp.Value
	}
	assert.Equal(t, map[string]int64{"admitted": 3, "waited": 2, "refused": 3}, counts)
	wait := got["redcoord.rate.wait"].(metricdata.Histogram[float64])
	sleeps := map[string]uint64{}
	for _, dp := range wait.DataPoints {
		o, _ := dp.Attributes.Value(attribute.Key("outcome"))
		sleeps[o.AsString()] = dp.Count
	}
	assert.Equal(t, map[string]uint64{"admitted": 1, "ended": 1}, sleeps)
}
