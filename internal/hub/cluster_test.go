package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redcoord/redcoord/internal/obs"
	"github.com/redcoord/redcoord/internal/redistest"
)

// shardChannels returns PUBSUB SHARDCHANNELS of the node at addr, sorted.
func shardChannels(t *testing.T, addr string) []string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer func() { _ = rdb.Close() }()
	chs, err := rdb.PubSubShardChannels(testCtx(t), "*").Result()
	require.NoError(t, err)
	slices.Sort(chs)
	return chs
}

// classicChannels returns PUBSUB CHANNELS of the node at addr.
func classicChannels(t *testing.T, addr string) []string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer func() { _ = rdb.Close() }()
	chs, err := rdb.PubSubChannels(testCtx(t), "*").Result()
	require.NoError(t, err)
	return chs
}

// channelsPerMaster returns per channels for every master of cl, keyed by
// the master's address, with the hash tags the scripts use.
func channelsPerMaster(cl *redistest.Cluster, per int) map[string][]string {
	out := make(map[string][]string)
	for i := 0; len(out) < len(cl.Masters()) || !enough(out, per); i++ {
		ch := fmt.Sprintf("rc:{n%d}:ch", i)
		m := cl.MasterFor(ch)
		if len(out[m]) < per {
			out[m] = append(out[m], ch)
		}
	}
	return out
}

func enough(m map[string][]string, per int) bool {
	for _, chs := range m {
		if len(chs) < per {
			return false
		}
	}
	return true
}

// On Cluster the Hub subscribes with SSUBSCRIBE, one connection per primary
// that owns a channel waited on; a message published on one shard reaches
// that shard's subscribers only, and leaving unsubscribes on every node.
func TestShardedHub(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	rdb := cl.Client(t)
	h := newHub(t, rdb)
	ctx := testCtx(t)
	checkKeySlot(t, rdb)

	byMaster := channelsPerMaster(cl, 2)
	subs := make(map[string]*Subscription)
	for _, chs := range byMaster {
		for _, ch := range chs {
			subs[ch] = subscribe(t, h, ch, "")
		}
	}
	st := h.Stats()
	assert.Equal(t, 3, st.Nodes, "one connection per primary")
	assert.Equal(t, 6, st.Channels)
	for m, chs := range byMaster {
		want := slices.Clone(chs)
		slices.Sort(want)
		assert.Equal(t, want, shardChannels(t, m), "the shard channels of %s are its own names", m)
		assert.Empty(t, classicChannels(t, m), "no SUBSCRIBE anywhere, the probe included")
	}

	for _, chs := range byMaster {
		ch := chs[0]
		n, err := rdb.SPublish(ctx, ch, One()).Result()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "one receiver, on the owning shard")
		awaitWake(t, subs[ch], ch)
	}
	for ch, s := range subs {
		if !slices.ContainsFunc(mapsValues(byMaster), func(chs []string) bool { return chs[0] == ch }) {
			assert.False(t, take(s), "%s was not published to", ch)
		}
	}

	for _, s := range subs {
		s.Close()
	}
	for _, m := range cl.Masters() {
		eventually(t, func() bool { return len(shardChannels(t, m)) == 0 }, "PUBSUB SHARDCHANNELS empty on "+m)
	}
	assert.Equal(t, 0, h.Stats().Channels)
}

func mapsValues(m map[string][]string) [][]string {
	var out [][]string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// A channel whose slot moves to another primary (the server unsubscribes
// it) is resubscribed on the new owner, and its waiters are woken to
// re-check; later messages reach them there.
func TestShardedHubSlotMoves(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	rdb := cl.Client(t)
	var ev heard
	h := newHub(t, rdb, WithObserver(ev.add))
	ch := "rc:{moving}:ch"
	from := cl.MasterFor(ch)
	to := cl.Masters()[(slices.Index(cl.Masters(), from)+1)%3]
	s := subscribe(t, h, ch, "")

	cl.MoveSlot(t, redisSlot(t, rdb, ch), to)
	awaitWake(t, s, "the move wakes the waiter")
	eventually(t, func() bool { return slices.Contains(shardChannels(t, to), ch) }, "subscribed on the new owner")
	assert.Empty(t, shardChannels(t, from))
	assert.GreaterOrEqual(t, h.Stats().Moves, int64(1))
	moved := ev.of(obs.HubMoved)
	require.NotEmpty(t, moved, "the observer hears the move")
	assert.Equal(t, ch, moved[0].Name)
	assert.Empty(t, ev.of(obs.HubReconnected), "no connection was lost")
	take(s)

	require.NoError(t, rdb.SPublish(testCtx(t), ch, One()).Err())
	awaitWake(t, s, "a message on the new owner")
}

func redisSlot(t *testing.T, rdb *redis.ClusterClient, key string) int {
	t.Helper()
	slot, err := rdb.ClusterKeySlot(testCtx(t), key).Result()
	require.NoError(t, err)
	return int(slot)
}

// A manual failover demotes the primary, which unsubscribes its shard
// channels; a killed primary drops the connection. Either way the channel
// ends up subscribed on the promoted replica and messages reach it.
func TestShardedHubFailover(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "CLUSTER FAILOVER", true: "kill"}[kill], func(t *testing.T) {
			cl := redistest.StartCluster(t, 3, 1)
			rdb := cl.Client(t)
			var ev heard
			h := newHub(t, rdb, WithObserver(ev.add))
			ch := "rc:{failing}:ch"
			old := cl.MasterFor(ch)
			s := subscribe(t, h, ch, "w")

			var promoted string
			if kill {
				promoted = cl.ReplicasOf(old)[0]
				cl.Kill(t, old)
				awaitWake(t, s, "the lost connection wakes the waiter")
				cl.WaitHealthy(t)
			} else {
				promoted = cl.Failover(t, old)
				awaitWake(t, s, "the demotion wakes the waiter")
			}
			// The cluster has settled on the new primary; the Hub moves the
			// channel on its own schedule. Publish until a message reaches
			// it.
			awaitMessage(t, rdb, s, ch, "w")
			// On the new primary; or, if the cluster's view had not caught
			// up when the Hub asked, on the demoted one, now its replica,
			// which serves the shard's messages too.
			assert.True(t, slices.Contains(shardChannels(t, promoted), ch) ||
				(!kill && slices.Contains(shardChannels(t, old), ch)), "subscribed in the shard")
			if slices.Contains(shardChannels(t, promoted), ch) { // not back on the demoted primary
				moved := ev.of(obs.HubMoved)
				require.NotEmpty(t, moved, "the observer hears the move")
				assert.Equal(t, ch, moved[len(moved)-1].Name)
			}
			if kill {
				assert.NotEmpty(t, ev.of(obs.HubReconnected), "the lost shard connection")
			}
		})
	}
}

// failoverPatience bounds the wait for a message to reach a Hub after a
// failover: the cluster has settled, but the Hub moves a channel in attempts
// of up to its confirm timeout (5 s) with pauses of up to moveBackoff, and a
// loaded machine slows both.
const failoverPatience = 60 * time.Second

// awaitMessage publishes a message targeted at id on ch, again and again,
// until one of them reaches s: a targeted message sets s's Payload, which a
// wake from a move of the channel does not. Publishing may fail, or reach no
// subscriber, while the cluster client or the Hub still follows the
// failover; each attempt reloads the client's slot map first.
func awaitMessage(t *testing.T, rdb *redis.ClusterClient, s *Subscription, ch, id string) {
	t.Helper()
	for i, deadline := 0, time.Now().Add(failoverPatience); time.Now().Before(deadline); i++ {
		rdb.ReloadState(context.Background())
		_ = rdb.SPublish(testCtx(t), ch, To(id, fmt.Sprintf("after-failover-%d", i))).Err()
		select {
		case <-s.C():
			if strings.HasPrefix(s.Payload(), "after-failover-") {
				return
			}
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("no message reached the Hub within %v of the failover", failoverPatience)
}

// A cluster without sharded pub/sub (before Redis 7.0; here SSUBSCRIBE is
// renamed away) is detected once by the probe, and the Hub uses SUBSCRIBE.
func TestShardedHubFallsBackToSubscribe(t *testing.T) {
	srv := redistest.Real(t, "--rename-command", "SSUBSCRIBE", "", "--rename-command", "SPUBLISH", "")
	// An artificial one-node cluster: go-redis's ClusterSlots serves a
	// standalone server as if it owned every slot.
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		DisableIdentity: true,
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: srv.Addr}}}}, nil
		},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	h := newHub(t, rdb)
	a := subscribe(t, h, "rc:{a}:ch", "")
	b := subscribe(t, h, "rc:{b}:ch", "")
	st := h.Stats()
	assert.Equal(t, 0, st.Nodes)
	assert.Equal(t, int64(4), st.Commands, "the SSUBSCRIBE probe once, then the SUBSCRIBE probe and one per channel")
	require.NoError(t, Publish(testCtx(t), rdb, "rc:{a}:ch", One()), "the refused SPUBLISH becomes a PUBLISH")
	awaitWake(t, a, "a PUBLISH reaches a SUBSCRIBE")
	assert.False(t, take(b))
}

// keySlot agrees with the server's CLUSTER KEYSLOT.
func checkKeySlot(t *testing.T, rdb *redis.ClusterClient) {
	for _, key := range []string{"", "a", "rc:{orders}:ch", "{}x", "x{}{y}", "{a}{b}", "no-brace", "rc:{n17}:lock", "é{ü}"} {
		assert.Equal(t, redisSlot(t, rdb, key), KeySlot(key), key)
	}
}

// Behind a Sentinel failover client, a killed primary drops the Hub's
// connection: go-redis reconnects to the new primary and the Hub wakes its
// waiters as their channels are resubscribed there. A forced failover leaves
// the old primary running and the Hub connected to it: it hears the new
// primary's messages once the old one replicates from it (PUBLISH is
// replicated); until then waiters re-check on their timers.
func TestHubSentinelFailover(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "SENTINEL FAILOVER", true: "kill"}[kill], func(t *testing.T) {
			s := redistest.StartSentinel(t)
			rdb := s.FailoverClient(t)
			h := newHub(t, rdb)
			sub := subscribe(t, h, "rc:{failing}:ch", "")
			if kill {
				s.KillPrimary(t)
				awaitWake(t, sub, "the resubscription wakes the waiter")
				assert.GreaterOrEqual(t, h.Stats().Reconnects, int64(1))
			} else {
				s.Failover(t)
			}
			take(sub)
			heard := false
			for deadline := time.Now().Add(30 * time.Second); !heard && time.Now().Before(deadline); {
				require.NoError(t, ignoreReadOnly(rdb.Publish(testCtx(t), "rc:{failing}:ch", One()).Err()))
				select {
				case <-sub.C():
					heard = true
				case <-time.After(100 * time.Millisecond):
				}
			}
			assert.True(t, heard, "a message on the new primary reaches the Hub")
		})
	}
}

// ignoreReadOnly drops the errors of a write sent during a failover.
func ignoreReadOnly(err error) error {
	if err != nil && (strings.HasPrefix(err.Error(), "READONLY") || strings.Contains(err.Error(), "connection refused")) {
		return nil
	}
	return err
}
