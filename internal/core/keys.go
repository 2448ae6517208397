package core

import "strings"

// The key schema: every key and channel any primitive uses, in one table.
// A name N under the Client's prefix P has keys "P:{N}:<part>": the hash
// tag {N} puts every key of a name in one Redis Cluster slot, so that every
// script touches one slot. A part with a tail ("rel:<client id>") is one
// key or channel per value of the tail. Two channels belong to a Client
// rather than to a name: "P:<part>". Keys are built only from this table
// (Session.Key, KeyTail, Keys, ClientKey); a part that is not in it is a bug,
// which TestKeyspaceMatchesSchema finds.

// Part names one key or channel of the schema.
type Part uint8

// The parts, in the schema's order.
const (
	KeyLock           Part = iota // the hold: rlock, rfairlock, rrwlock's writer, relection's leader
	KeyFence                      // the fencing-token counter the lock kinds share
	KeyMarkers                    // a Client's request markers
	KeyWaiters                    // rlock's waiter registry
	KeyQueue                      // rfairlock's queue
	KeyAlive                      // rfairlock's heartbeats
	KeyWaiting                    // rfairlock's requests
	KeyReaders                    // rrwlock's read holds
	KeyReadLeases                 // rrwlock's read leases
	KeyWriters                    // rrwlock's waiting writers
	KeyWriterWaiters              // rrwlock's writers' wake registry
	KeyElectQueue                 // relection's candidates' queue
	KeyElectAlive                 // relection's candidates' heartbeats
	KeyElectWaiting               // relection's candidates' requests
	KeyElectLog                   // relection's log of leaders
	KeyPermits                    // a semaphore's permits
	KeySemQueue                   // Semaphore's fair queue
	KeySemAlive                   // Semaphore's fair waiters' heartbeats
	KeySemWaiting                 // Semaphore's fair waiters' requests
	KeySemWaiters                 // Semaphore's unfair waiter registry
	KeySemSizes                   // Semaphore's unfair waiters by size
	KeyDone                       // a semaphore's request markers
	KeyDrained                    // Semaphore's Drain replies
	KeySemLeases                  // ExpirableSemaphore's permit leases
	KeyTokens                     // ExpirableSemaphore's permit tokens
	KeySemFence                   // ExpirableSemaphore's token counter
	KeyXSemWaiters                // ExpirableSemaphore's waiter registry
	KeyLatch                      // rlatch's count
	KeyLatchDone                  // rlatch's request markers
	KeyRate                       // rratelimit's limit and state
	KeyRateDone                   // rratelimit's recent takes
	KeyCheck                      // the server check's XADD probe
	ChanName                      // a name's broadcasts
	ChanNameClient                // a name's wakes for one Client
	ChanWritersClient             // rrwlock's writers' wakes for one Client
	ChanSem                       // a semaphore's broadcasts
	ChanSemClient                 // a semaphore's wakes for one Client
	ChanLatch                     // rlatch's channel
	ChanNotices                   // a Client's forced-unlock notices
	ChanProbe                     // the Hub's subscription probe
	ChanCheck                     // the server check's pub/sub probe
	numParts
)

// Kinds of primitive, as the lock hash's k field names them.
const (
	Rlock      = "rlock"
	Rfairlock  = "rfairlock"
	Rrwlock    = "rrwlock"
	Relection  = "relection"
	Rsemaphore = "rsemaphore"
	Expirable  = "rsemaphore-expirable"
	Rlatch     = "rlatch"
	Ratelimit  = "rratelimit"
	AnyKind    = "Client" // a part every Client uses, whatever it holds
)

// Key describes one key or channel.
type Key struct {
	Part   string   // what follows "P:{N}:" ("P:" for a Client's)
	Tail   string   // what the variable tail after Part and ":" is, "" if none
	Type   string   // the Redis type: hash, zset, list, string, stream; channel
	Kinds  []string // the primitives that use it
	Client bool     // "P:<part>": the Client's, under no name
	// InUse keys exist while a lock of any kind holds the name or waits
	// for it: Forget refuses while one exists. A fair queue's three keys
	// hold the same ids, so its heartbeats zset stands for them (with the
	// list, for rfairlock).
	InUse bool
	Doc   string
}

// IsChannel reports whether k is a pub/sub channel rather than a key.
func (k Key) IsChannel() bool { return k.Type == "channel" }

// Pattern returns how k reads in the docs: "P:{N}:rel:<client id>".
func (k Key) Pattern() string {
	s := "P:{N}:" + k.Part
	if k.Client {
		s = "P:" + k.Part
	}
	if k.Tail != "" {
		s += ":<" + k.Tail + ">"
	}
	return s
}

var (
	locks      = []string{Rlock, Rfairlock, Rrwlock, Relection}
	semaphore  = []string{Rsemaphore}
	expirable  = []string{Expirable}
	semaphores = []string{Rsemaphore, Expirable}
)

// schema is the table; it is never written.
var schema = [numParts]Key{
	KeyLock: {Part: "lock", Type: "hash", Kinds: locks, InUse: true,
		Doc: "the hold: owner, hold count, token, holder metadata"},
	KeyFence: {Part: "fence", Type: "hash", Kinds: locks,
		Doc: "the last fencing token; expires a day after it (Forget deletes it)"},
	KeyMarkers: {Part: "rel", Tail: "client id", Type: "zset", Kinds: locks,
		Doc: "the Client's releases and given-up acquires, kept a minute"},
	KeyWaiters: {Part: "waiters", Type: "zset", Kinds: []string{Rlock}, InUse: true,
		Doc: "Clients with blocked acquires to wake → heartbeat deadline"},
	KeyQueue: {Part: "queue", Type: "list", Kinds: []string{Rfairlock}, InUse: true,
		Doc: "waiting requests, FIFO"},
	KeyAlive: {Part: "alive", Type: "zset", Kinds: []string{Rfairlock}, InUse: true,
		Doc: "waiting request → heartbeat deadline"},
	KeyWaiting: {Part: "waiting", Type: "hash", Kinds: []string{Rfairlock},
		Doc: "waiting request → when it joined, the lease it asks for"},
	KeyReaders: {Part: "readers", Type: "hash", Kinds: []string{Rrwlock}, InUse: true,
		Doc: "reader → hold count, name of the hold, last request, value"},
	KeyReadLeases: {Part: "leases", Type: "zset", Kinds: []string{Rrwlock}, InUse: true,
		Doc: "reader → lease deadline"},
	KeyWriters: {Part: "writers", Type: "zset", Kinds: []string{Rrwlock}, InUse: true,
		Doc: "waiting writer → heartbeat deadline"},
	KeyWriterWaiters: {Part: "wwaiters", Type: "zset", Kinds: []string{Rrwlock}, InUse: true,
		Doc: "Clients with waiting writers to wake → heartbeat deadline"},
	KeyElectQueue: {Part: "elect-queue", Type: "list", Kinds: []string{Relection},
		Doc: "campaigns, FIFO"},
	KeyElectAlive: {Part: "elect-alive", Type: "zset", Kinds: []string{Relection}, InUse: true,
		Doc: "campaign → heartbeat deadline"},
	KeyElectWaiting: {Part: "elect-waiting", Type: "hash", Kinds: []string{Relection},
		Doc: "campaign → when it joined, the lease it asks for"},
	KeyElectLog: {Part: "elect-log", Type: "stream", Kinds: []string{Relection},
		Doc: "leader changes; expires a day after the last"},
	KeyPermits: {Part: "permits", Type: "hash", Kinds: semaphores,
		Doc: "kind and total permits (and available ones, for Semaphore); no TTL"},
	KeySemQueue: {Part: "sem-queue", Type: "list", Kinds: semaphore,
		Doc: "fair waiters' requests, FIFO"},
	KeySemAlive: {Part: "sem-alive", Type: "zset", Kinds: semaphore,
		Doc: "fair waiter → heartbeat deadline"},
	KeySemWaiting: {Part: "sem-waiting", Type: "hash", Kinds: semaphore,
		Doc: "fair waiter → when it joined, the permits it asks for"},
	KeySemWaiters: {Part: "sem-waiters", Type: "zset", Kinds: semaphore,
		Doc: "unfair waiters to wake, with heartbeat deadlines"},
	KeySemSizes: {Part: "sem-sizes", Type: "zset", Kinds: semaphore,
		Doc: "the unfair waiters again, with the permits each asks for"},
	KeyDone: {Part: "done", Type: "zset", Kinds: semaphores,
		Doc: "recent request ids, so a retry applies once"},
	KeyDrained: {Part: "drained", Tail: "request id", Type: "string", Kinds: semaphore,
		Doc: "what a Drain took, for its retries"},
	KeySemLeases: {Part: "sem-leases", Type: "zset", Kinds: expirable,
		Doc: "permit id → lease deadline"},
	KeyTokens: {Part: "tokens", Type: "hash", Kinds: expirable,
		Doc: "permit id → fencing token"},
	KeySemFence: {Part: "sem-fence", Type: "hash", Kinds: expirable,
		Doc: "the last permit token; expires a day after it"},
	KeyXSemWaiters: {Part: "xsem-waiters", Type: "zset", Kinds: expirable,
		Doc: "waiters to wake, with heartbeat deadlines"},
	KeyLatch: {Part: "latch", Type: "hash", Kinds: []string{Rlatch},
		Doc: "the count, its round and spent TTL"},
	KeyLatchDone: {Part: "latch-done", Type: "zset", Kinds: []string{Rlatch},
		Doc: "recent request ids, so a retry applies once"},
	KeyRate: {Part: "rate", Type: "hash", Kinds: []string{Ratelimit},
		Doc: "the limit, the GCRA state (TAT) and the last request counted; expires when idle"},
	KeyRateDone: {Part: "rate-done", Type: "zset", Kinds: []string{Ratelimit},
		Doc: "recent takes' request ids → their slot, so a retry is counted once"},
	KeyCheck: {Part: "probe", Type: "stream", Kinds: []string{AnyKind},
		Doc: "the server check's XADD, deleted by the script that makes it " +
			"(N: redcoord-check, numbered per primary on Cluster)"},
	ChanName: {Part: "ch", Type: "channel", Kinds: locks,
		Doc: "broadcasts: forced unlock, readers may enter, a new leader"},
	ChanNameClient: {Part: "ch", Tail: "client id", Type: "channel", Kinds: locks,
		Doc: "wakes and grants for one Client's waiters; forced-unlock notices on Cluster"},
	ChanWritersClient: {Part: "wch", Tail: "client id", Type: "channel", Kinds: []string{Rrwlock},
		Doc: "wakes for one Client's waiting writers"},
	ChanSem: {Part: "sem-ch", Type: "channel", Kinds: semaphores,
		Doc: "broadcasts: permits set or added"},
	ChanSemClient: {Part: "sem-ch", Tail: "client id", Type: "channel", Kinds: semaphores,
		Doc: "wakes and grants for one Client's waiters"},
	ChanLatch: {Part: "latch-ch", Type: "channel", Kinds: []string{Rlatch},
		Doc: "the latch opened, was set or deleted"},
	ChanNotices: {Part: "ch", Tail: "client id", Client: true, Type: "channel", Kinds: locks,
		Doc: "forced-unlock notices for the Client's holds (outside Cluster)"},
	ChanProbe: {Part: "hub:probe", Client: true, Type: "channel", Kinds: []string{AnyKind},
		Doc: "the Hub's probe that SUBSCRIBE is allowed"},
	ChanCheck: {Part: "probe-ch", Type: "channel", Kinds: []string{AnyKind},
		Doc: "the server check's probe of publish and subscribe (N as for P:{N}:probe)"},
}

// Schema returns every key and channel, in the order of the parts.
func Schema() []Key { s := schema; return s[:] }

// Describe returns the schema's entry for p.
func Describe(p Part) Key { return schema[p] }

// Key returns the key or channel p of name: "<prefix>:{<name>}:<part>".
// For a part with a tail, it is the base that a script follows with ":"
// and the tail (the writers' channel, "…:wch").
func (s *Session) Key(name string, p Part) string {
	return s.Config.Prefix + ":{" + name + "}:" + schema[p].Part
}

// KeyTail returns the key or channel p of name with its tail:
// "<prefix>:{<name>}:<part>:<tail>". With tail "", it is the prefix to
// which a tail is appended ("…:drained:").
func (s *Session) KeyTail(name string, p Part, tail string) string {
	return s.Config.Prefix + ":{" + name + "}:" + withTail(p, tail)
}

// Keys returns name's keys or channels parts, each as KeyTail with tail
// makes it (a part without a tail ignores it), as substrings of one
// string: a handle that keeps them all keeps one allocation.
func (s *Session) Keys(name, tail string, parts ...Part) []string {
	return s.KeysThen(name, tail, "", parts...)
}

// KeysThen is Keys with then written after the last part in the same
// string, as the last key's end: a caller that also keeps a string which
// ends a key (an owner id after a markers key's Client id) keeps it as a
// substring too.
func (s *Session) KeysThen(name, tail, then string, parts ...Part) []string {
	n := len(then)
	for _, p := range parts {
		n += len(s.Config.Prefix) + len(name) + len(":{}:") + len(schema[p].Part)
		if schema[p].Tail != "" {
			n += len(":") + len(tail)
		}
	}
	var b strings.Builder
	b.Grow(n)
	ends := make([]int, len(parts))
	for i, p := range parts {
		b.WriteString(s.Config.Prefix)
		b.WriteString(":{")
		b.WriteString(name)
		b.WriteString("}:")
		b.WriteString(schema[p].Part)
		if schema[p].Tail != "" {
			b.WriteString(":")
			b.WriteString(tail)
		}
		if i == len(parts)-1 {
			b.WriteString(then)
		}
		ends[i] = b.Len()
	}
	all := b.String()
	keys := make([]string, len(parts))
	start := 0
	for i, end := range ends {
		keys[i], start = all[start:end], end
	}
	return keys
}

// ClientKey returns the Client's channel p: "<prefix>:<part>", followed by
// ":<tail>" for a part with a tail.
func (s *Session) ClientKey(p Part, tail string) string {
	return s.Config.Prefix + ":" + withTail(p, tail)
}

// withTail returns p's part, followed by ":" and tail if p has a tail.
func withTail(p Part, tail string) string {
	k := schema[p]
	if k.Tail == "" {
		return k.Part
	}
	return k.Part + ":" + tail
}

// InUse returns name's keys that exist while a lock of any kind holds
// the name or waits for it (Key.InUse), in the schema's order.
func (s *Session) InUse(name string) []string {
	var keys []string
	for p, k := range schema {
		if k.InUse {
			keys = append(keys, s.Key(name, Part(p)))
		}
	}
	return keys
}
