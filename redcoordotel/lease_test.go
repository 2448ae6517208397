package redcoordotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/redcoordotel"
	"github.com/redcoord/redcoord/rlock"
)

// Lease records the shortest lease of its Clients until unregistered, and
// names what is wrong with its arguments.
func TestLease(t *testing.T) {
	mp, reader := meter(t)
	rdb := redistest.Mini(t).Client(t)
	long := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(30*time.Second))
	short := locktest.NewClient(t, rdb, redcoord.WithLeaseTTL(900*time.Millisecond))

	for _, bad := range []struct {
		mp      *sdkmetric.MeterProvider
		clients []*redcoord.Client
		want    string
	}{
		{nil, []*redcoord.Client{long}, "redcoord: invalid argument: redcoordotel.Lease: nil MeterProvider"},
		{mp, nil, "redcoord: invalid argument: redcoordotel.Lease: no Client given"},
		{mp, []*redcoord.Client{long, nil}, "redcoord: invalid argument: redcoordotel.Lease: Client 2 of 2 is nil"},
	} {
		var err error
		if bad.mp == nil {
			_, err = redcoordotel.Lease(nil, bad.clients...)
		} else {
			_, err = redcoordotel.Lease(bad.mp, bad.clients...)
		}
		require.ErrorIs(t, err, redcoord.ErrInvalidArgument)
		assert.EqualError(t, err, bad.want)
	}

	reg, err := redcoordotel.Lease(mp, long, short)
	require.NoError(t, err)
	lease := collect(t, reader)["redcoord.lease"].(metricdata.Gauge[float64])
	require.Len(t, lease.DataPoints, 1)
	assert.InDelta(t, 0.9, lease.DataPoints[0].Value, 1e-9, "the shortest lease, in seconds")
	require.NoError(t, reg.Unregister())
	_, recorded := collect(t, reader)["redcoord.lease"]
	assert.False(t, recorded, "nothing recorded once unregistered")
}

// redcoord.leases.lost has a zero for a primitive from its first hold, and
// counts a lost hold but not one the Client's Close ended, which the hold
// histogram records as closed.
func TestLeasesLost(t *testing.T) {
	ctx := context.Background()
	mp, reader := meter(t)
	obs, err := redcoordotel.Observer(mp, nil)
	require.NoError(t, err)
	lost := func() map[string]int64 {
		got := map[string]int64{}
		sum, _ := collect(t, reader)["redcoord.leases.lost"].(metricdata.Sum[int64])
		for _, dp := range sum.DataPoints {
			p, _ := dp.Attributes.Value(attribute.Key("primitive"))
			got[p.AsString()] = dp.Value
		}
		return got
	}

	assert.Empty(t, lost(), "no series before a hold")
	for range 3 {
		obs(redcoord.Event{Kind: redcoord.Acquired, Primitive: "rlock", Name: "a", Context: ctx})
	}
	obs(redcoord.Event{Kind: redcoord.WaitEnded, Primitive: "rfairlock", Name: "a", Context: ctx})
	assert.Equal(t, map[string]int64{"rlock": 0}, lost(), "a zero from the first hold, not from a wait that ended")

	obs(redcoord.Event{Kind: redcoord.LeaseLost, Primitive: "rlock", Name: "a", Err: redcoord.ErrClosed})
	assert.Equal(t, map[string]int64{"rlock": 0}, lost(), "Close ends a hold, it does not lose it")
	obs(redcoord.Event{Kind: redcoord.LeaseLost, Primitive: "rlock", Name: "a", Err: errors.New("gone")})
	obs(redcoord.Event{Kind: redcoord.LeaseLost, Primitive: "rrwlock", Name: "b", Err: errors.New("gone")})
	assert.Equal(t, map[string]int64{"rlock": 1, "rrwlock": 1}, lost())

	got := collect(t, reader)
	outcomes := map[string]uint64{}
	for _, dp := range got["redcoord.hold"].(metricdata.Histogram[float64]).DataPoints {
		o, _ := dp.Attributes.Value(attribute.Key("outcome"))
		outcomes[o.AsString()] += dp.Count
		assert.Equal(t, []float64{0.001, 3600}, []float64{dp.Bounds[0], dp.Bounds[len(dp.Bounds)-1]},
			"holds' buckets from a millisecond to an hour")
	}
	assert.Equal(t, map[string]uint64{"closed": 1, "lost": 2}, outcomes)
	for _, dp := range got["redcoord.wait"].(metricdata.Histogram[float64]).DataPoints {
		assert.Equal(t, []float64{0.0005, 60}, []float64{dp.Bounds[0], dp.Bounds[len(dp.Bounds)-1]},
			"waits' buckets from half a millisecond to a minute")
	}
}

// A hold the Client's Close ends is recorded as closed, not lost.
func TestCloseIsNoLoss(t *testing.T) {
	ctx := context.Background()
	mp, reader := meter(t)
	obs, err := redcoordotel.Observer(mp, nil)
	require.NoError(t, err)
	c, err := redcoord.New(redistest.Mini(t).Client(t), redcoord.WithObserver(obs))
	require.NoError(t, err)
	require.NoError(t, rlock.New(c, "m").Lock(ctx))
	closing, cancel := context.WithTimeout(ctx, redistest.Patience(10*time.Second))
	defer cancel()
	require.NoError(t, c.Close(closing))

	got := collect(t, reader)
	lost := got["redcoord.leases.lost"].(metricdata.Sum[int64])
	require.Len(t, lost.DataPoints, 1)
	assert.Zero(t, lost.DataPoints[0].Value)
	hold := got["redcoord.hold"].(metricdata.Histogram[float64])
	require.Len(t, hold.DataPoints, 1)
	o, _ := hold.DataPoints[0].Attributes.Value(attribute.Key("outcome"))
	assert.Equal(t, "closed", o.AsString())
}
