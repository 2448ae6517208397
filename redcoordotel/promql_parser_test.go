package redcoordotel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The dashboard's parser takes the PromQL the dashboard and the rules use,
// with its types, and refuses what Prometheus refuses.
func TestPromQLParser(t *testing.T) {
	for expr, want := range map[string]pqType{
		`up`:                            pqVector,
		`-1 + 2 ^ 3 ^ 2`:                pqScalar,
		`1 > bool 2`:                    pqScalar,
		`x[5m]`:                         pqMatrix,
		`x{a="b", c=~"d|e",} offset 1h`: pqVector,
		`{__name__=~"x_.+", job!="a"}`:  pqVector,
		`rate(x[1h30m])`:                pqVector,
		`max_over_time(sum(x)[10m:1m])`: pqVector,
		`max_over_time(sum(x)[10m:])`:   pqVector,
		`sum without (a) (x) / on (b) group_left (c) y`: pqVector,
		`topk(3, x) or vector(0)`:                       pqVector,
		`sum(x) by (a)`:                                 pqVector,
		`histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m]))) # a comment`: pqVector,
		`round(x)`:    pqVector,
		"x{a=`b\\d`}": pqVector,
	} {
		q, err := parsePromQL(expr)
		if assert.NoError(t, err, expr) {
			assert.Equal(t, want, q.typ, expr)
		}
	}
	for _, expr := range []string{
		``,
		`rate(x)`,                     // a range vector wanted
		`sum by (le) rate(x[5m])`,     // the aggregation's parentheses left out
		`sum(rate(x[5m])`,             // unbalanced
		`sum(x))`,                     // unbalanced
		`x{a="b"`,                     // unbalanced
		`x{a=b}`,                      // not a string
		`x{a~"b"}`,                    // no such matcher
		`x{a=~"("}`,                   // no regular expression
		`x{a="1", a="2"}`,             // a label twice
		`{a="b"}`,                     // no metric name
		`x{__name__="y"}`,             // two names
		`histogram_quantile(0.99)`,    // too few arguments
		`histogram_quantile(x, 0.99)`, // arguments swapped
		`vector(1, 2)`,                // too many arguments
		`nosuch(x)`,                   // unknown function
		`x[5m] + 1`,                   // arithmetic on a range
		`sum(x)[5m]`,                  // a range on an expression needs a subquery
		`x[5x]`,                       // no duration
		`x offset`,                    // no duration
		`x and 1`,                     // a set operator with a scalar
		`1 > 2`,                       // scalars compared without bool
		`x + bool y`,                  // bool on arithmetic
		`sum by (a) (x) by (b)`,       // two groupings
		`x > > y`,                     // no operand
		`x y`,                         // two operands
		`x{a="b\q"}`,                  // no escape
		`"unterminated`,               // no end
		`x ! y`,                       // no operator
		`sum by (a:b) (x)`,            // not a label name
		`x and and y`,                 // a keyword as an operand
		`topk(x, y)`,                  // the parameter a vector
		`rate(x[5m]) * on (a) 2`,      // vector matching with a scalar
		`scalar(x) + rate(y[5m])[5m]`, // a range on a call
	} {
		_, err := parsePromQL(expr)
		assert.Error(t, err, expr)
	}
}
