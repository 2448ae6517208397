package redcoordotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/redcoordotel"
	"github.com/redcoord/redcoord/rlock"
)

// A Lock that waits, its Unlock, a lost hold and the watchdog's ticks are
// recorded as metrics in an in-memory reader, and the wait as a span.
func TestMetricsAndSpans(t *testing.T) {
	srv := redistest.Mini(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	mp, reader := meter(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(ctx) }()
	obs, err := redcoordotel.Observer(mp, tp)
	require.NoError(t, err)
	c := locktest.NewClient(t, rdb, redcoord.WithObserver(obs), redcoord.WithLeaseTTL(300*time.Millisecond))

	holder := rlock.New(locktest.NewClient(t, rdb), "m")
	require.NoError(t, holder.Lock(ctx))
	m := rlock.New(c, "m")
	done := make(chan error, 1)
	request, parent := tp.Tracer("test").Start(ctx, "request")
	go func() { done <- m.Lock(request) }()
	time.Sleep(50 * time.Millisecond)
	locktest.Eventually(t, func() bool { return waiters(t, reader) == 1 }, "one acquire waits")
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, <-done)
	time.Sleep(150 * time.Millisecond) // a watchdog tick
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, rdb.Del(ctx, "rc:{m}:lock").Err())
	select {
	case <-m.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("not lost")
	}

	obs(redcoord.Event{Kind: redcoord.HubMoved, Name: "rc:{m}:ch"})

	got := collect(t, reader)
	wait := got["redcoord.wait"].(metricdata.Histogram[float64])
	var waits uint64
	for _, dp := range wait.DataPoints {
		waits += dp.Count
	}
	assert.Equal(t, uint64(2), waits, "two acquires")
	handoff := got["redcoord.handoff"].(metricdata.Histogram[float64])
	require.Len(t, handoff.DataPoints, 1)
	assert.Equal(t, uint64(1), handoff.DataPoints[0].Count, "the acquire the release woke; not the one that did not wait")
	hold := got["redcoord.hold"].(metricdata.Histogram[float64])
	assert.Len(t, hold.DataPoints, 2, "released and lost")
	lost := got["redcoord.leases.lost"].(metricdata.Sum[int64])
	require.Len(t, lost.DataPoints, 1)
	assert.Equal(t, int64(1), lost.DataPoints[0].Value)
	renewals := got["redcoord.renewals"].(metricdata.Sum[int64])
	require.Len(t, renewals.DataPoints, 1)
	assert.Positive(t, renewals.DataPoints[0].Value)
	assert.Equal(t, int64(0), waiters(t, reader), "nobody waits now")
	moves := got["redcoord.hub.moves"].(metricdata.Sum[int64])
	require.Len(t, moves.DataPoints, 1)
	assert.Equal(t, int64(1), moves.DataPoints[0].Value)

	ended := spans.Ended()
	require.NotEmpty(t, ended)
	assert.Equal(t, "redcoord.acquire rlock", ended[0].Name())
	assert.GreaterOrEqual(t, ended[0].EndTime().Sub(ended[0].StartTime()), 40*time.Millisecond, "the span covers the wait")
	assert.Len(t, ended, 1, "acquires that did not wait make no span")
	parent.End()
	assert.Equal(t, parent.SpanContext().SpanID(), ended[0].Parent().SpanID(), "a child of the caller's span")
	assert.Equal(t, parent.SpanContext().TraceID(), ended[0].SpanContext().TraceID())
}

// meter returns a MeterProvider that records into a manual reader, shut
// down when the test ends.
func meter(t *testing.T) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, reader
}

// collect reads the reader's metrics by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			got[metric.Name] = metric.Data
		}
	}
	return got
}

// waiters sums redcoord.waiters over its attributes.
func waiters(t *testing.T, reader *sdkmetric.ManualReader) int64 {
	t.Helper()
	sum, ok := collect(t, reader)["redcoord.waiters"].(metricdata.Sum[int64])
	if !ok {
		return 0
	}
	var n int64
	for _, dp := range sum.DataPoints {
		n += dp.Value
	}
	return n
}

// redcoord.handoff records an Acquired event's Woken, by primitive, and
// nothing for an acquire no wake ended.
func TestHandOff(t *testing.T) {
	mp, reader := meter(t)
	obs, err := redcoordotel.Observer(mp, nil)
	require.NoError(t, err)
	ctx := context.Background()
	for _, e := range []redcoord.Event{
		{Kind: redcoord.Acquired, Primitive: "rlock", Wait: time.Second, Waited: true, Woken: 2 * time.Millisecond},
		{Kind: redcoord.Acquired, Primitive: "rlock", Wait: time.Second, Waited: true}, // a poll's try
		{Kind: redcoord.Acquired, Primitive: "rlock", Wait: time.Millisecond},          // no wait
		{Kind: redcoord.Acquired, Primitive: "rfairlock", Wait: time.Second, Waited: true, Woken: time.Millisecond},
		{Kind: redcoord.WaitEnded, Primitive: "rlock", Wait: time.Second, Waited: true, Err: context.Canceled},
	} {
		e.Context = ctx
		obs(e)
	}
	handoff := collect(t, reader)["redcoord.handoff"].(metricdata.Histogram[float64])
	byKind := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, dp := range handoff.DataPoints {
		prim, _ := dp.Attributes.Value("primitive")
		byKind[prim.AsString()] = dp
	}
	require.Len(t, byKind, 2)
	assert.Equal(t, uint64(1), byKind["rlock"].Count)
	assert.InDelta(t, 0.002, byKind["rlock"].Sum, 1e-9)
	assert.Equal(t, uint64(1), byKind["rfairlock"].Count)
	assert.InDelta(t, 0.001, byKind["rfairlock"].Sum, 1e-9)
	b := byKind["rlock"].Bounds
	assert.Equal(t, []float64{0.00005, 1}, []float64{b[0], b[len(b)-1]}, "hand-offs' buckets from 50µs to a second")
}
