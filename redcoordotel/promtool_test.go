package redcoordotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Where promtool is installed, it checks the alert rules and runs their
// unit tests (dashboards/alerts_test.yaml: each alert fires on the series
// it is for, with its annotations rendered, and not on the healthy ones),
// and its parser checks every query of the dashboard, as recording rules.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" { // .ci/run installs it (Debian's prometheus package)
			t.Fatal("promtool is not installed")
		}
		t.Skip("promtool is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %v:\n%s", args, out)
	}
	run("dashboards", "check", "rules", "alerts.yaml")
	run("dashboards", "test", "rules", "alerts_test.yaml")

	raw, err := os.ReadFile("dashboards/redcoord.json")
	require.NoError(t, err)
	type queries struct {
		Targets []struct{ Expr string } `json:"targets"`
		Panels  []queries               `json:"panels"` // a row's
	}
	var d struct {
		queries
		Templating struct {
			List []struct{ Definition string } `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	var exprs []string
	var walk func(q queries)
	walk = func(q queries) {
		for _, tg := range q.Targets {
			exprs = append(exprs, tg.Expr)
		}
		for _, p := range q.Panels {
			walk(p)
		}
	}
	walk(d.queries)
	labelValues := regexp.MustCompile(`^label_values\((.+), *\w+\)$`)
	for _, v := range d.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			exprs = append(exprs, m[1])
		}
	}
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, e := range exprs {
		e, err := substitute(e)
		require.NoError(t, err)
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query%d", i), Expr: e})
	}
	file, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dashboard.yaml"), file, 0o600))
	run(dir, "check", "rules", "dashboard.yaml")
	t.Logf("promtool checked the rules, ran their tests and parsed %d queries of the dashboard", len(exprs))
}
