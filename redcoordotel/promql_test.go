package redcoordotel_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// This file, promql_expr_test.go and promql_selector_test.go are a parser
// of the PromQL the dashboard and the alert rules use, for their test: the
// Prometheus module, whose parser promtool uses, would add its long list
// of requirements (cloud SDKs, Kubernetes clients) to this module's. It
// follows the grammar of Prometheus's parser (operator precedence,
// aggregation and vector matching clauses, range and subquery selectors,
// offset) and checks the types of operands and function arguments; it
// knows the functions the queries use and a few more, and does not
// evaluate.

// pqType is the type of a PromQL expression.
type pqType int

const (
	pqScalar pqType = iota + 1
	pqVector
	pqMatrix
	pqString
)

func (t pqType) String() string {
	return [...]string{"?", "scalar", "instant vector", "range vector", "string"}[t]
}

// selector is one vector selector of a query: its metric name (or a
// __name__ matcher) and its other matchers.
type selector struct {
	name     string // "" when a __name__ matcher names it
	nameRE   *regexp.Regexp
	matchers map[string]string // label: value or pattern, as written
}

// grouping is an aggregation's or a vector matching's label list, with
// the selectors of the expressions it groups.
type grouping struct {
	what      string // "by", "without", "on", "ignoring"
	labels    []string
	selectors []selector
}

// query is what parsePromQL found in one expression.
type query struct {
	typ       pqType
	selectors []selector
	groupings []grouping
}

// functions gives each known function's argument types (a trailing
// optional one marked by opt) and its result.
var functions = map[string]struct {
	args []pqType
	opt  int // how many of the last args may be left out
	ret  pqType
}{
	"rate": {[]pqType{pqMatrix}, 0, pqVector}, "irate": {[]pqType{pqMatrix}, 0, pqVector},
	"increase": {[]pqType{pqMatrix}, 0, pqVector}, "delta": {[]pqType{pqMatrix}, 0, pqVector},
	"deriv": {[]pqType{pqMatrix}, 0, pqVector}, "changes": {[]pqType{pqMatrix}, 0, pqVector},
	"resets": {[]pqType{pqMatrix}, 0, pqVector}, "avg_over_time": {[]pqType{pqMatrix}, 0, pqVector},
	"max_over_time": {[]pqType{pqMatrix}, 0, pqVector}, "min_over_time": {[]pqType{pqMatrix}, 0, pqVector},
	"sum_over_time": {[]pqType{pqMatrix}, 0, pqVector}, "last_over_time": {[]pqType{pqMatrix}, 0, pqVector},
	"absent_over_time":   {[]pqType{pqMatrix}, 0, pqVector},
	"histogram_quantile": {[]pqType{pqScalar, pqVector}, 0, pqVector},
	"abs":                {[]pqType{pqVector}, 0, pqVector}, "absent": {[]pqType{pqVector}, 0, pqVector},
	"clamp_min": {[]pqType{pqVector, pqScalar}, 0, pqVector}, "clamp_max": {[]pqType{pqVector, pqScalar}, 0, pqVector},
	"round": {[]pqType{pqVector, pqScalar}, 1, pqVector}, "vector": {[]pqType{pqScalar}, 0, pqVector},
	"scalar": {[]pqType{pqVector}, 0, pqScalar}, "time": {nil, 0, pqScalar},
}

// aggregations maps each aggregation operator to the type of its
// parameter, 0 for none.
var aggregations = map[string]pqType{
	"sum": 0, "avg": 0, "min": 0, "max": 0, "count": 0, "group": 0, "stddev": 0, "stdvar": 0,
	"topk": pqScalar, "bottomk": pqScalar, "quantile": pqScalar, "count_values": pqString,
}

// precedence gives each binary operator's precedence, higher binding
// tighter; ^ is right-associative.
var precedence = map[string]int{
	"or": 1, "and": 2, "unless": 2,
	"==": 3, "!=": 3, "<=": 3, "<": 3, ">=": 3, ">": 3,
	"+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "atan2": 5, "^": 6,
}

// keywords are the words that are no metric name where an operand is due.
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "by": true, "without": true, "offset": true,
}

// token is one lexeme: its text, and whether it is a string literal.
type token struct {
	text string
	str  bool
}

// lexPromQL splits s into tokens. It refuses a character PromQL has no
// use for and an unterminated string.
func lexPromQL(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // a comment, to the end of the line
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			text := s[i+1 : j]
			if c != '`' {
				u, err := strconv.Unquote(`"` + strings.ReplaceAll(text, `\'`, `'`) + `"`)
				if err != nil {
					return nil, fmt.Errorf("string at %d: %v", i, err)
				}
				text = u
			}
			toks = append(toks, token{text: text, str: true})
			i = j + 1
		case unicode.IsLetter(rune(c)) || c == '_' || c == ':' || c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || s[j] == '_' || s[j] == ':' ||
				s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			toks = append(toks, token{text: s[i:j]})
			i = j
		default:
			op := ""
			for _, o := range []string{"==", "!=", "=~", "!~", "<=", ">=", "(", ")", "[", "]", "{", "}", ",",
				"=", "<", ">", "+", "-", "*", "/", "%", "^"} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("unexpected %q at %d", c, i)
			}
			toks = append(toks, token{text: op})
			i += len(op)
		}
	}
	return toks, nil
}

// parsePromQL parses one expression.
func parsePromQL(s string) (query, error) {
	toks, err := lexPromQL(s)
	if err != nil {
		return query{}, err
	}
	p := &pqParser{toks: toks}
	typ, err := p.expr(0)
	if err != nil {
		return query{}, err
	}
	if p.i < len(p.toks) {
		return query{}, fmt.Errorf("unexpected %q after the expression", p.toks[p.i].text)
	}
	return query{typ: typ, selectors: p.selectors, groupings: p.groupings}, nil
}

type pqParser struct {
	toks      []token
	i         int
	selectors []selector
	groupings []grouping
}

func (p *pqParser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{}
}

func (p *pqParser) next() token {
	t := p.peek()
	p.i++
	return t
}

func (p *pqParser) expect(text string) error {
	if t := p.next(); t.str || t.text != text {
		return fmt.Errorf("want %q, got %q", text, t.text)
	}
	return nil
}
