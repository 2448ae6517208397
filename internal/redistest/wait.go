package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The bounds below are an idle machine's; poll and waitPing stretch each
// by Patience.
const (
	// settleTimeout bounds every wait for a topology to form or to recover
	// from a failover, a kill or a slot move.
	settleTimeout = 20 * time.Second
	// pollInterval is the pause between two checks of a wait.
	pollInterval = 50 * time.Millisecond
	// adminTimeout bounds each network step (dial, write, read) of one
	// command the helpers send themselves, so one check of a wait never
	// takes long, even against a node that has been killed.
	adminTimeout = 2 * time.Second
)

// poll calls check until it returns nil: at least once, and for at most
// about Patience(timeout) (plus the duration of one check), pollInterval
// apart. It returns nil, or the last error of check wrapped with what and
// the time spent.
func poll(timeout time.Duration, what string, check func() error) error {
	timeout = Patience(timeout)
	start := time.Now()
	limit := max(int(timeout/pollInterval), 0) + 1
	var err error
	for i := 0; i < limit; i++ {
		if err = check(); err == nil {
			return nil
		}
		if time.Since(start) >= timeout {
			break
		}
		time.Sleep(pollInterval)
	}
	return fmt.Errorf("redistest: %s: not done after %v: %w", what, time.Since(start).Round(time.Millisecond), err)
}

// mustPoll is poll that calls t.Fatal on a timeout.
func mustPoll(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	if err := poll(timeout, what, check); err != nil {
		t.Fatal(err)
	}
}

// adminOptions returns the options of the plain clients the helpers use to
// send their own commands (CLUSTER, INFO, ROLE, SENTINEL) to one process:
// no retries, short timeouts, no handshake extras that 7.0 does not know.
func adminOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:            addr,
		DisableIdentity: true,
		MaxRetries:      -1,
		DialTimeout:     adminTimeout,
		ReadTimeout:     adminTimeout,
		WriteTimeout:    adminTimeout,
		PoolSize:        2,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// infoField returns the value of field in the text of an INFO or CLUSTER
// INFO reply ("field:value" lines), or "" if it is absent.
func infoField(info, field string) string {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), field+":"); ok {
			return v
		}
	}
	return ""
}

// role returns the first element of ROLE: "master", "slave" or "sentinel".
func role(rdb *redis.Client) (string, error) {
	reply, err := rdb.Do(context.Background(), "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(reply) == 0 {
		return "", errors.New("redistest: empty ROLE reply")
	}
	s, ok := reply[0].(string)
	if !ok {
		return "", fmt.Errorf("redistest: ROLE reply %v", reply)
	}
	return s, nil
}
