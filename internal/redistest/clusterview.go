package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// clusterNode is one line of a CLUSTER NODES reply: one node as the node
// that answered sees it.
type clusterNode struct {
	id       string
	addr     string // 127.0.0.1:port, without the bus port
	self     bool   // the line of the node that answered
	master   bool
	failed   bool   // flagged fail, fail?, handshake or noaddr
	masterID string // the master a replica follows; "" for a master
	slots    [][2]int
	open     bool // a slot is marked importing or migrating on this node
}

// owns reports whether n serves slot.
func (n *clusterNode) owns(slot int) bool {
	for _, r := range n.slots {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// clusterView is a parsed CLUSTER NODES reply.
type clusterView []clusterNode

// parseClusterNodes parses the reply of CLUSTER NODES.
func parseClusterNodes(text string) (clusterView, error) {
	var v clusterView
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("redistest: CLUSTER NODES line %q: too few fields", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{id: f[0], addr: addr}
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "myself":
				n.self = true
			case "master":
				n.master = true
			case "fail", "fail?", "handshake", "noaddr":
				n.failed = true
			}
		}
		if f[3] != "-" {
			n.masterID = f[3]
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				n.open = true
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			if !isRange {
				hi = lo
			}
			a, errA := strconv.Atoi(lo)
			b, errB := strconv.Atoi(hi)
			if errA != nil || errB != nil {
				return nil, fmt.Errorf("redistest: CLUSTER NODES slot %q in line %q", s, line)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		v = append(v, n)
	}
	return v, nil
}

// byAddr returns the node at addr, or nil.
func (v clusterView) byAddr(addr string) *clusterNode {
	for i := range v {
		if v[i].addr == addr {
			return &v[i]
		}
	}
	return nil
}

// self returns the node that answered, or nil.
func (v clusterView) self() *clusterNode {
	for i := range v {
		if v[i].self {
			return &v[i]
		}
	}
	return nil
}

// masters returns the addresses of the masters that are up and pass alive,
// ordered by their first slot, then by address.
func (v clusterView) masters(alive func(addr string) bool) []string {
	var ms []*clusterNode
	for i := range v {
		if n := &v[i]; n.master && !n.failed && alive(n.addr) {
			ms = append(ms, n)
		}
	}
	first := func(n *clusterNode) int {
		if len(n.slots) == 0 {
			return numSlots
		}
		return n.slots[0][0]
	}
	slices.SortFunc(ms, func(a, b *clusterNode) int {
		if d := first(a) - first(b); d != 0 {
			return d
		}
		return strings.Compare(a.addr, b.addr)
	})
	addrs := make([]string, len(ms))
	for i, n := range ms {
		addrs[i] = n.addr
	}
	return addrs
}

// replicasOf returns the sorted addresses of the replicas that are up, pass
// alive and follow the master at addr.
func (v clusterView) replicasOf(addr string, alive func(addr string) bool) []string {
	m := v.byAddr(addr)
	if m == nil {
		return nil
	}
	var rs []string
	for _, n := range v {
		if !n.master && n.masterID == m.id && !n.failed && alive(n.addr) {
			rs = append(rs, n.addr)
		}
	}
	slices.Sort(rs)
	return rs
}

// ownerOf returns the master that is up and serves slot, or nil.
func (v clusterView) ownerOf(slot int) *clusterNode {
	for i := range v {
		if n := &v[i]; n.master && !n.failed && n.owns(slot) {
			return n
		}
	}
	return nil
}

// summary describes the view's live topology in a canonical form that two
// nodes agreeing on it render identically: each live master with its slots
// and live replicas. It fails if a slot is open for migration or if the live
// masters do not serve all numSlots slots (a master that has been killed but
// is not yet flagged failed counts as not serving).
func (v clusterView) summary(alive func(addr string) bool) (string, error) {
	var b strings.Builder
	covered := 0
	for _, addr := range v.masters(alive) {
		m := v.byAddr(addr)
		if m.open {
			return "", fmt.Errorf("%s has a slot open for migration", addr)
		}
		for _, r := range m.slots {
			covered += r[1] - r[0] + 1
		}
		fmt.Fprintf(&b, "%s %v replicas %v; ", addr, m.slots, v.replicasOf(addr, alive))
	}
	if covered != numSlots {
		return "", fmt.Errorf("live masters serve %d of %d slots", covered, numSlots)
	}
	return b.String(), nil
}

// settled is the check of WaitHealthy.
func (c *Cluster) settled() error {
	var ref string
	for _, addr := range c.live() {
		rdb := c.admin[addr]
		ctx := context.Background()
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
		}
		if s := infoField(info, "cluster_state"); s != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", addr, s)
		}
		v, err := c.viewOf(addr)
		if err != nil {
			return err
		}
		if len(v) != len(c.nodes) {
			return fmt.Errorf("%s knows %d of %d nodes", addr, len(v), len(c.nodes))
		}
		sum, err := v.summary(c.alive)
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		if ref == "" {
			ref = sum
		} else if sum != ref {
			return fmt.Errorf("nodes disagree: %s sees %s, an earlier node %s", addr, sum, ref)
		}
		if me := v.self(); me != nil && !me.master {
			repl, err := rdb.Info(ctx, "replication").Result()
			if err != nil {
				return fmt.Errorf("%s: INFO replication: %w", addr, err)
			}
			if s := infoField(repl, "master_link_status"); s != "up" || infoField(repl, "master_sync_in_progress") != "0" {
				return fmt.Errorf("replica %s: master_link_status:%s", addr, s)
			}
		}
	}
	if ref == "" {
		return errors.New("no live node")
	}
	return nil
}

// view returns the CLUSTER NODES of the first live node that answers.
func (c *Cluster) view() (clusterView, error) {
	err := errors.New("redistest: no live node")
	for _, addr := range c.live() {
		var v clusterView
		if v, err = c.viewOf(addr); err == nil {
			return v, nil
		}
	}
	return nil, err
}

// viewOf returns the CLUSTER NODES of the node at addr.
func (c *Cluster) viewOf(addr string) (clusterView, error) {
	text, err := c.admin[addr].ClusterNodes(context.Background()).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", addr, err)
	}
	return parseClusterNodes(text)
}
