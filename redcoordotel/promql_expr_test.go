package redcoordotel_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/prometheus/common/model"
)

// The expressions of the PromQL parser (promql_test.go): operators,
// operands, calls.

// expr parses a binary expression whose operators have a precedence of
// at least min (precedence climbing).
func (p *pqParser) expr(min int) (pqType, error) {
	first := len(p.selectors)
	lhs, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		t := p.peek()
		prec, ok := precedence[t.text]
		if t.str || !ok || prec < min {
			return lhs, nil
		}
		p.next()
		comparison := prec == 3
		isBool := false
		if p.peek().text == "bool" {
			if !comparison {
				return 0, fmt.Errorf("bool after %q, not a comparison", t.text)
			}
			p.next()
			isBool = true
		}
		var match *grouping
		if w := p.peek().text; w == "on" || w == "ignoring" {
			p.next()
			labels, err := p.labelList()
			if err != nil {
				return 0, err
			}
			match = &grouping{what: w, labels: labels}
			if g := p.peek().text; g == "group_left" || g == "group_right" {
				p.next()
				if p.peek().text == "(" {
					if _, err := p.labelList(); err != nil {
						return 0, err
					}
				}
			}
		}
		next := prec + 1
		if t.text == "^" {
			next = prec // right-associative
		}
		rhs, err := p.expr(next)
		if err != nil {
			return 0, err
		}
		if lhs == pqMatrix || rhs == pqMatrix || lhs == pqString || rhs == pqString {
			return 0, fmt.Errorf("operator %q between a %v and a %v", t.text, lhs, rhs)
		}
		if prec <= 2 && (lhs != pqVector || rhs != pqVector) {
			return 0, fmt.Errorf("set operator %q needs two instant vectors", t.text)
		}
		if match != nil {
			if lhs != pqVector || rhs != pqVector {
				return 0, fmt.Errorf("%s(...) between a %v and a %v", match.what, lhs, rhs)
			}
			match.selectors = slices.Clone(p.selectors[first:])
			p.groupings = append(p.groupings, *match)
		}
		if lhs == pqScalar && rhs == pqScalar {
			if comparison && !isBool {
				return 0, fmt.Errorf("comparison %q of two scalars needs bool", t.text)
			}
		} else {
			lhs = pqVector
		}
	}
}

// unary parses a signed expression.
func (p *pqParser) unary() (pqType, error) {
	if t := p.peek(); !t.str && (t.text == "-" || t.text == "+") {
		p.next()
		typ, err := p.unary()
		if err == nil && typ != pqScalar && typ != pqVector {
			err = fmt.Errorf("sign before a %v", typ)
		}
		return typ, err
	}
	return p.postfix()
}

// postfix parses an operand and its range or subquery and its offset.
func (p *pqParser) postfix() (pqType, error) {
	vectorSelector := p.peek().text == "{" || isName(p.peek()) && p.isSelectorAhead()
	typ, err := p.primary()
	if err != nil {
		return 0, err
	}
	if p.peek().text == "[" {
		p.next()
		t := p.next() // the lexer keeps "5m:1m" one token
		if t.str {
			return 0, fmt.Errorf("want a duration, got a string %q", t.text)
		}
		rng, step, subquery := strings.Cut(t.text, ":")
		if err := duration(rng); err != nil {
			return 0, err
		}
		switch {
		case subquery && typ != pqVector:
			return 0, fmt.Errorf("subquery of a %v", typ)
		case subquery && step != "":
			if err := duration(step); err != nil {
				return 0, err
			}
		case !subquery && !vectorSelector:
			return 0, fmt.Errorf("range on an expression that is not a vector selector; a subquery needs a colon")
		}
		if err := p.expect("]"); err != nil {
			return 0, err
		}
		typ = pqMatrix
	}
	if p.peek().text == "offset" {
		p.next()
		if t := p.next(); t.str {
			return 0, fmt.Errorf("want a duration, got a string %q", t.text)
		} else if err := duration(t.text); err != nil {
			return 0, err
		}
	}
	return typ, nil
}

// isName says whether t is an identifier.
func isName(t token) bool {
	return !t.str && t.text != "" && (unicode.IsLetter(rune(t.text[0])) || t.text[0] == '_' || t.text[0] == ':')
}

// isSelectorAhead says whether the identifier at p.i begins a selector
// rather than a call or an aggregation.
func (p *pqParser) isSelectorAhead() bool {
	t := p.peek()
	_, fn := functions[t.text]
	_, agg := aggregations[t.text]
	return !fn && !agg && (p.i+1 >= len(p.toks) || p.toks[p.i+1].text != "(")
}

// duration checks a duration such as 5m or 1h30m.
func duration(s string) error {
	if _, err := model.ParseDuration(s); err != nil {
		return fmt.Errorf("duration %q: %v", s, err)
	}
	return nil
}

// primary parses a number, a string, a parenthesis, a call, an
// aggregation or a vector selector.
func (p *pqParser) primary() (pqType, error) {
	t := p.peek()
	switch {
	case t.str:
		p.next()
		return pqString, nil
	case t.text == "(":
		p.next()
		typ, err := p.expr(0)
		if err != nil {
			return 0, err
		}
		return typ, p.expect(")")
	case t.text == "{":
		return pqVector, p.selector("")
	case t.text != "" && (t.text[0] >= '0' && t.text[0] <= '9' || t.text[0] == '.'):
		p.next()
		if _, err := strconv.ParseFloat(t.text, 64); err != nil {
			return 0, fmt.Errorf("number %q: %v", t.text, err)
		}
		return pqScalar, nil
	case !isName(t):
		return 0, fmt.Errorf("unexpected %q", t.text)
	}
	if param, ok := aggregations[t.text]; ok {
		return p.aggregation(param)
	}
	if f, ok := functions[t.text]; ok {
		p.next()
		if err := p.expect("("); err != nil {
			return 0, err
		}
		var args []pqType
		for p.peek().text != ")" {
			if len(args) > 0 {
				if err := p.expect(","); err != nil {
					return 0, err
				}
			}
			typ, err := p.expr(0)
			if err != nil {
				return 0, err
			}
			args = append(args, typ)
		}
		p.next()
		if len(args) < len(f.args)-f.opt || len(args) > len(f.args) {
			return 0, fmt.Errorf("%s: %d arguments, want %d", t.text, len(args), len(f.args))
		}
		for n, typ := range args {
			if typ != f.args[n] {
				return 0, fmt.Errorf("%s: argument %d is a %v, want a %v", t.text, n+1, typ, f.args[n])
			}
		}
		return f.ret, nil
	}
	if keywords[t.text] {
		return 0, fmt.Errorf("unexpected %q", t.text)
	}
	if p.i+1 < len(p.toks) && p.toks[p.i+1].text == "(" {
		return 0, fmt.Errorf("unknown function %q", t.text)
	}
	p.next()
	return pqVector, p.selector(t.text)
}
