package redcoordotel_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grafanaVars gives the dashboard's variables and Grafana's own the values
// a query could have.
var grafanaVars = map[string]string{
	"__rate_interval": "5m", "__interval": "1m", "__range": "6h", "job": ".*", "kind": ".*",
}

// grafanaVar matches $name and ${name}.
var grafanaVar = regexp.MustCompile(`\$(\w+)|\$\{(\w+)\}`)

// substitute puts the values of grafanaVars in for the variables of expr.
func substitute(expr string) (string, error) {
	var err error
	out := grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		name := strings.Trim(v, "${}")
		value, ok := grafanaVars[name]
		if !ok {
			err = fmt.Errorf("the variable %s is not the dashboard's", v)
		}
		return value
	})
	if err == nil && strings.Contains(out, "$") {
		err = fmt.Errorf("a stray $ in %q", expr)
	}
	return out, err
}

// checkQuery parses a query of the dashboard or the alert rules and checks
// that every metric it names is one redcoordotel exports, with the labels
// it matches and groups on. It returns the query.
func checkQuery(ex exported, expr string) (query, error) {
	expr, err := substitute(expr)
	if err != nil {
		return query{}, err
	}
	q, err := parsePromQL(expr)
	if err != nil {
		return query{}, err
	}
	if q.typ != pqVector && q.typ != pqScalar {
		return query{}, fmt.Errorf("the query is a %v", q.typ)
	}
	for _, sel := range q.selectors {
		if _, err := namesOf(ex, sel); err != nil {
			return query{}, err
		}
	}
	for _, g := range q.groupings {
		if g.what != "by" && g.what != "on" {
			continue
		}
		for _, l := range g.labels {
			found := false
			for _, sel := range g.selectors {
				names, _ := namesOf(ex, sel)
				for _, n := range names {
					found = found || ex.labels[n][l]
				}
			}
			if !found {
				return query{}, fmt.Errorf("%s (%s): no series grouped has the label %s", g.what, strings.Join(g.labels, ", "), l)
			}
		}
	}
	return q, nil
}

// namesOf returns the exported series names sel selects, and an error if
// there are none or if one lacks a label sel matches on.
func namesOf(ex exported, sel selector) ([]string, error) {
	var names []string
	for n := range ex.labels {
		if n == sel.name || sel.nameRE != nil && sel.nameRE.MatchString(n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s%v: redcoordotel exports no such series", sel.name, sel.nameRE)
	}
	for l := range sel.matchers {
		for _, n := range names {
			if !ex.labels[n][l] && sel.nameRE == nil {
				return nil, fmt.Errorf("%s has no label %s", n, l)
			}
		}
	}
	return names, nil
}

// panel is what the test reads of a dashboard's panel.
type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// The dashboard is valid JSON with unique panel ids on a grid without
// overlaps, its data source a variable, every panel's queries well formed
// and naming only what redcoordotel exports, every instrument shown.
func TestDashboard(t *testing.T) {
	ex := scrape(t)
	raw, err := os.ReadFile("dashboards/redcoord.json")
	require.NoError(t, err)
	var d struct {
		Title         string  `json:"title"`
		UID           string  `json:"uid"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
		Templating    struct {
			List []struct {
				Type       string          `json:"type"`
				Name       string          `json:"name"`
				Query      json.RawMessage `json:"query"`
				Definition string          `json:"definition"`
				Datasource *struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	require.NoError(t, dec.Decode(&d), "the dashboard is JSON")
	assert.False(t, dec.More(), "one JSON value")
	assert.NotEmpty(t, d.Title)
	assert.NotEmpty(t, d.UID)
	assert.Positive(t, d.SchemaVersion)

	// Every data source a panel, target or variable names is the variable.
	var tree map[string]any
	require.NoError(t, json.Unmarshal(raw, &tree))
	walkDatasources(t, "", tree)

	vars := map[string]string{}
	labelValues := regexp.MustCompile(`^label_values\((.+), *([a-zA-Z_]\w*)\)$`)
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type != "query" {
			continue
		}
		require.NotNil(t, v.Datasource, "variable %s", v.Name)
		m := labelValues.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s: %q is no label_values(selector, label)", v.Name, v.Definition)
		q, err := checkQuery(ex, m[1])
		require.NoError(t, err, "variable %s", v.Name)
		found := false
		for _, sel := range q.selectors {
			names, _ := namesOf(ex, sel)
			for _, n := range names {
				found = found || ex.labels[n][m[2]]
			}
		}
		assert.True(t, found, "variable %s: no series has the label %s", v.Name, m[2])
		var vq struct {
			Query string `json:"query"`
		}
		require.NoError(t, json.Unmarshal(v.Query, &vq), "variable %s", v.Name)
		assert.Equal(t, v.Definition, vq.Query, "variable %s: its query is its definition", v.Name)
	}
	assert.Equal(t, map[string]string{"datasource": "datasource", "job": "query", "kind": "query"}, vars)
	var dsQuery string
	for _, v := range d.Templating.List {
		if v.Name == "datasource" {
			require.NoError(t, json.Unmarshal(v.Query, &dsQuery))
		}
	}
	assert.Equal(t, "prometheus", dsQuery, "the data source variable lists Prometheus data sources")

	ids := map[int]string{}
	var grid [][24]bool
	used := map[string]bool{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			assert.Positive(t, p.ID, where)
			if other, dup := ids[p.ID]; dup {
				t.Errorf("%s: id also of %q", where, other)
			}
			ids[p.ID] = p.Title
			g := p.GridPos
			if g.W < 1 || g.H < 1 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
				t.Errorf("%s: gridPos %+v off the 24-column grid", where, g)
			}
			for y := g.Y; y < g.Y+g.H && g.X >= 0 && g.X+g.W <= 24; y++ {
				for len(grid) <= y {
					grid = append(grid, [24]bool{})
				}
				for x := g.X; x < g.X+g.W; x++ {
					if grid[y][x] {
						t.Errorf("%s: overlaps another panel at (%d, %d)", where, x, y)
					}
					grid[y][x] = true
				}
			}
			if p.Type == "row" {
				assert.Empty(t, p.Targets, where)
				walk(p.Panels)
				continue
			}
			assert.NotEmpty(t, p.Title, where)
			assert.NotEmpty(t, p.Description, "%s: a description says what it shows", where)
			if assert.NotNil(t, p.Datasource, where) {
				assert.Equal(t, "prometheus", p.Datasource.Type, where)
			}
			assert.NotEmpty(t, p.Targets, "%s: queries", where)
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				assert.NotEmpty(t, tg.RefID, where)
				assert.False(t, refs[tg.RefID], "%s: refId %s twice", where, tg.RefID)
				refs[tg.RefID] = true
				q, err := checkQuery(ex, tg.Expr)
				if !assert.NoError(t, err, "%s, %s: %s", where, tg.RefID, tg.Expr) {
					continue
				}
				for _, sel := range q.selectors {
					names, _ := namesOf(ex, sel)
					if sel.nameRE == nil {
						for _, n := range names {
							used[n] = true
						}
					}
				}
			}
		}
	}
	walk(d.Panels)
	assert.GreaterOrEqual(t, len(ids), 10, "panels")

	for f, series := range ex.families {
		if f == "target_info" {
			continue
		}
		shown := false
		for _, s := range series {
			shown = shown || used[s]
		}
		assert.True(t, shown, "no panel shows %s", f)
	}
}

// walkDatasources fails t for a data source that is not the dashboard's
// variable (or Grafana's own, for annotations).
func walkDatasources(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k != "datasource" {
				walkDatasources(t, path+"."+k, e)
				continue
			}
			ds, ok := e.(map[string]any)
			if !ok {
				t.Errorf("%s.datasource: %v, want {type, uid}", path, e)
				continue
			}
			uid := ds["uid"]
			if uid != "${datasource}" && !(ds["type"] == "grafana" && uid == "-- Grafana --") {
				t.Errorf("%s.datasource: uid %v, want ${datasource}", path, uid)
			}
		}
	case []any:
		for i, e := range v {
			walkDatasources(t, fmt.Sprintf("%s[%d]", path, i), e)
		}
	}
}
