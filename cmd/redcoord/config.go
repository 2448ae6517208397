package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redcoord/redcoord/internal/core"
)

// config is every flag; one config fills two flag sets, the global one and
// the command's (see run).
type config struct {
	addrs    string // -redis: host:port, or a comma-separated list
	cluster  bool
	sentinel string // the master's name
	user     string
	password string
	tls      bool
	cacert   string
	cert     string
	key      string
	insecure bool
	prefix   string
	json     bool
	yes      bool
	count    int
	limit    int
	timeout  time.Duration
	interval time.Duration
	forDur   time.Duration
}

// defaults returns the flags' defaults.
func defaults() *config {
	return &config{addrs: "127.0.0.1:6379", prefix: "rc", count: 500, limit: 1000, timeout: 10 * time.Second,
		interval: time.Second}
}

// flagSet returns a flag set over cfg, whose values it keeps as the
// defaults, writing errors and usage to w.
func (cfg *config) flagSet(name string, w io.Writer) *flag.FlagSet {
	d := *cfg
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = usage(fs)
	fs.StringVar(&cfg.addrs, "redis", d.addrs,
		"`host:port` of the server; with -cluster, seed nodes; with -sentinel, the sentinels (comma-separated)")
	fs.BoolVar(&cfg.cluster, "cluster", d.cluster, "the server is a Redis Cluster: read every primary")
	fs.StringVar(&cfg.sentinel, "sentinel", d.sentinel, "the `master` name, asking the sentinels given by -redis")
	fs.StringVar(&cfg.user, "user", d.user, "ACL user name (AUTH user password)")
	fs.StringVar(&cfg.password, "password", d.password, "password; the default is $REDISCLI_AUTH")
	fs.Lookup("password").DefValue = "" // a password given before the command is kept, never printed in the usage
	fs.BoolVar(&cfg.tls, "tls", d.tls, "connect with TLS")
	fs.StringVar(&cfg.cacert, "cacert", d.cacert, "CA certificate `file` (PEM) that signs the server's; implies -tls")
	fs.StringVar(&cfg.cert, "cert", d.cert, "client certificate `file` (PEM), with -key; implies -tls")
	fs.StringVar(&cfg.key, "key", d.key, "client private key `file` (PEM), with -cert")
	fs.BoolVar(&cfg.insecure, "insecure", d.insecure, "with TLS, do not verify the server's certificate")
	fs.StringVar(&cfg.prefix, "prefix", d.prefix, "the key prefix the Clients use (redcoord.WithPrefix)")
	fs.BoolVar(&cfg.json, "json", d.json, "print JSON: one document per ls or inspect, one per change for watch")
	fs.BoolVar(&cfg.yes, "y", d.yes, "force-unlock without asking")
	fs.IntVar(&cfg.count, "count", d.count, "SCAN's COUNT: keys looked at per batch")
	fs.IntVar(&cfg.limit, "limit", d.limit, "at most this many members read of each queue, lease set or registry")
	fs.DurationVar(&cfg.timeout, "timeout", d.timeout,
		"bound of a command (ls, inspect, force-unlock) and of each read of watch; dial and I/O timeout too")
	fs.DurationVar(&cfg.interval, "interval", d.interval, "watch: read the state at least this often")
	fs.DurationVar(&cfg.forDur, "for", d.forDur, "watch: stop after this long (0: until interrupted)")
	return fs
}

// check reports the first flag given a value it cannot take.
func (cfg *config) check() error {
	switch {
	case strings.TrimSpace(cfg.addrs) == "":
		return usagef("-redis: must name at least one host:port")
	case cfg.cluster && cfg.sentinel != "":
		return usagef("-cluster and -sentinel: choose one")
	case cfg.prefix == "" || strings.ContainsAny(cfg.prefix, "{}"):
		return usagef("-prefix: must be non-empty and contain no brace, got %q", cfg.prefix)
	case cfg.count < 1:
		return usagef("-count: must be at least 1, got %d", cfg.count)
	case cfg.limit < 1:
		return usagef("-limit: must be at least 1, got %d", cfg.limit)
	case cfg.timeout <= 0:
		return usagef("-timeout: must be positive, got %v", cfg.timeout)
	case cfg.interval < 10*time.Millisecond:
		return usagef("-interval: must be at least 10ms, got %v", cfg.interval)
	case cfg.forDur < 0:
		return usagef("-for: must not be negative, got %v", cfg.forDur)
	case (cfg.cert == "") != (cfg.key == ""):
		return usagef("-cert and -key: give both or neither")
	}
	for _, a := range cfg.addrList() {
		if strings.Contains(a, "://") || strings.Contains(a, "@") { // not echoed: it may hold a password
			return usagef("-redis: takes host:port, not a URL or user@host; give -user, -password, -tls apart")
		}
		if !strings.Contains(a, ":") {
			return usagef("-redis: %q is not host:port", a)
		}
	}
	if !cfg.cluster && cfg.sentinel == "" && len(cfg.addrList()) > 1 {
		return usagef("-redis: several addresses need -cluster or -sentinel")
	}
	return nil
}

// addrList returns -redis split at commas.
func (cfg *config) addrList() []string {
	var out []string
	for _, a := range strings.Split(cfg.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// secret returns -password, or $REDISCLI_AUTH when it is not given.
func (cfg *config) secret() string {
	if cfg.password != "" {
		return cfg.password
	}
	return os.Getenv("REDISCLI_AUTH")
}

// tlsConfig returns the TLS configuration the flags ask for, nil for none.
func (cfg *config) tlsConfig() (*tls.Config, error) {
	if !cfg.tls && cfg.cacert == "" && cfg.cert == "" && !cfg.insecure {
		return nil, nil
	}
	// -insecure is the operator's choice, as redis-cli's --insecure.
	t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.insecure}
	if cfg.cacert != "" {
		pem, err := os.ReadFile(cfg.cacert)
		if err != nil {
			return nil, usagef("-cacert: %v", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usagef("-cacert: %s holds no PEM certificate", cfg.cacert)
		}
	}
	if cfg.cert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.cert, cfg.key)
		if err != nil {
			return nil, usagef("-cert/-key: %v", err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}

// checkName reports why name cannot be a redcoord name, naming the argument.
func checkName(name string) error {
	if err := core.CheckNamed("NAME", name); err != nil {
		return usageError{err.Error()}
	}
	return nil
}
