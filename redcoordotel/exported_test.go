package redcoordotel_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/internal/locktest"
	"github.com/redcoord/redcoord/internal/redistest"
	"github.com/redcoord/redcoord/redcoordotel"
)

// exported is what a Prometheus scrape of redcoordotel's instruments
// shows: each series name with the labels its series carry (job and
// instance, which Prometheus adds, included), and each metric family with
// its series names.
type exported struct {
	labels   map[string]map[string]bool
	families map[string][]string
}

// scrape gathers redcoordotel's instruments through the OpenTelemetry
// Prometheus exporter with its defaults, after an event of every kind and
// a Lease, from the registry a promhttp handler serves.
func scrape(t *testing.T) exported {
	t.Helper()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(reg))
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { _ = mp.Shutdown(ctx) }()
	obs, err := redcoordotel.Observer(mp, nil)
	require.NoError(t, err)
	c := locktest.NewClient(t, redistest.Mini(t).Client(t), redcoord.WithLeaseTTL(3*time.Second))
	lease, err := redcoordotel.Lease(mp, c)
	require.NoError(t, err)
	defer func() { require.NoError(t, lease.Unregister()) }()

	for _, e := range []redcoord.Event{
		{Kind: redcoord.Waiting, Primitive: "rlock", Name: "a"},
		{Kind: redcoord.Acquired, Primitive: "rlock", Name: "a", Wait: 20 * time.Millisecond, Waited: true,
			Woken: time.Millisecond},
		{Kind: redcoord.WaitEnded, Primitive: "rlock", Name: "b", Wait: time.Second, Err: context.DeadlineExceeded},
		{Kind: redcoord.Released, Primitive: "rlock", Name: "a", Held: time.Second},
		{Kind: redcoord.LeaseLost, Primitive: "rlock", Name: "a", Held: time.Second, Err: errors.New("gone")},
		{Kind: redcoord.LeaseLost, Primitive: "rlock", Name: "a", Held: time.Second, Err: redcoord.ErrClosed},
		{Kind: redcoord.Renewed, Count: 2, Took: 2 * time.Millisecond},
		{Kind: redcoord.HubReconnected, Count: 3},
		{Kind: redcoord.HubMoved, Name: "rc:{a}:ch"},
		{Kind: redcoord.Retrying, Primitive: "rlock", Name: "a", Count: 1, Wait: time.Millisecond},
		{Kind: redcoord.RateAdmitted, Primitive: "rratelimit", Name: "api", Count: 1},
		{Kind: redcoord.RateWaited, Primitive: "rratelimit", Name: "api", Count: 1, Wait: time.Millisecond, Waited: true},
		{Kind: redcoord.RateRefused, Primitive: "rratelimit", Name: "api", Count: 1, Wait: time.Second},
	} {
		e.Context = ctx
		obs(e)
	}

	families, err := reg.Gather()
	require.NoError(t, err)
	ex := exported{labels: map[string]map[string]bool{}, families: map[string][]string{}}
	add := func(family, series string, labels []*dto.LabelPair, extra ...string) {
		if ex.labels[series] == nil {
			ex.labels[series] = map[string]bool{"job": true, "instance": true}
			ex.families[family] = append(ex.families[family], series)
		}
		for _, l := range labels {
			ex.labels[series][l.GetName()] = true
		}
		for _, l := range extra {
			ex.labels[series][l] = true
		}
	}
	for _, f := range families {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				add(name, name+"_bucket", m.GetLabel(), "le")
				add(name, name+"_sum", m.GetLabel())
				add(name, name+"_count", m.GetLabel())
			case dto.MetricType_COUNTER, dto.MetricType_GAUGE:
				add(name, name, m.GetLabel())
			default:
				t.Fatalf("%s: a %v, which this test does not name", name, f.GetType())
			}
		}
	}
	return ex
}

// The exporter names the instruments as the dashboard and the alert rules
// expect, with the labels they select on; a hold ended by the Client's
// Close is no lost hold.
func TestExported(t *testing.T) {
	ex := scrape(t)
	var names []string
	for f := range ex.families {
		names = append(names, f)
	}
	slices.Sort(names)
	assert.Equal(t, []string{
		"redcoord_handoff_seconds", "redcoord_hold_seconds", "redcoord_hub_moves_total", "redcoord_hub_reconnects_total",
		"redcoord_lease_seconds", "redcoord_leases_lost_total", "redcoord_rate_events_total",
		"redcoord_rate_wait_seconds", "redcoord_renewal_duration_seconds", "redcoord_renewals_total",
		"redcoord_wait_seconds", "redcoord_waiters", "target_info",
	}, names)
	assert.True(t, ex.labels["redcoord_wait_seconds_bucket"]["le"])
	assert.True(t, ex.labels["redcoord_wait_seconds_bucket"]["primitive"])
	assert.True(t, ex.labels["redcoord_handoff_seconds_bucket"]["primitive"])
	assert.False(t, ex.labels["redcoord_renewal_duration_seconds_bucket"]["primitive"])
}
