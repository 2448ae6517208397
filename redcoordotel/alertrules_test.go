package redcoordotel_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// alertRules is the file format of Prometheus rules, as far as this test
// reads it; a field it does not know fails the decoding.
type alertRules struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// templateFuncs stands in for the functions Prometheus gives alert
// templates, for parsing them.
var templateFuncs = template.FuncMap{
	"humanize": fmt.Sprint, "humanizeDuration": fmt.Sprint, "humanizePercentage": fmt.Sprint,
	"humanize1024": fmt.Sprint, "humanizeTimestamp": fmt.Sprint, "printf": fmt.Sprintf, "title": fmt.Sprint,
	"toUpper": fmt.Sprint, "toLower": fmt.Sprint, "reReplaceAll": fmt.Sprint, "query": fmt.Sprint,
}

// The alert rules are Prometheus's rule format with the alerts the
// dashboard's documentation names, each with a for, a severity and a
// summary and description that parse as templates and use only labels its
// query keeps; every query is well formed and names only what
// redcoordotel exports.
func TestAlertRules(t *testing.T) {
	ex := scrape(t)
	raw, err := os.ReadFile("dashboards/alerts.yaml")
	require.NoError(t, err)
	var rules alertRules
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&rules))
	require.NotEmpty(t, rules.Groups)

	var alerts []string
	labelRef := regexp.MustCompile(`\$labels\.(\w+)`)
	for _, g := range rules.Groups {
		assert.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			assert.Regexp(t, `^Redcoord[A-Z][A-Za-z]+$`, r.Alert)
			alerts = append(alerts, r.Alert)
			q, err := checkQuery(ex, r.Expr)
			if assert.NoError(t, err, "%s: %s", where, r.Expr) {
				assert.Equal(t, pqVector, q.typ, "%s: an alert's query is an instant vector", where)
			}
			if assert.NotEmpty(t, r.For, "%s: for", where) {
				_, err := model.ParseDuration(r.For)
				assert.NoError(t, err, "%s: for", where)
			}
			assert.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], "%s: severity", where)
			for _, a := range []string{"summary", "description"} {
				text := r.Annotations[a]
				assert.NotEmpty(t, text, "%s: %s", where, a)
				_, err := template.New(a).Funcs(templateFuncs).
					Parse("{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$value := .Value}}" + text)
				assert.NoError(t, err, "%s: %s", where, a)
				for _, m := range labelRef.FindAllStringSubmatch(text, -1) {
					for _, gr := range q.groupings {
						if gr.what == "by" || gr.what == "on" {
							assert.Contains(t, gr.labels, m[1], "%s: %s names $labels.%s, which %s (...) drops",
								where, a, m[1], gr.what)
						}
					}
				}
			}
		}
	}
	slices.Sort(alerts)
	assert.Equal(t, []string{"RedcoordAcquireWaitHigh", "RedcoordHoldLost", "RedcoordRateLimiterRefusingMost",
		"RedcoordRenewalSlow", "RedcoordWaitersPilingUp"}, alerts)
}
