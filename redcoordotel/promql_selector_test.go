package redcoordotel_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The aggregations and selectors of the PromQL parser (promql_test.go).

// aggregation parses sum(...), sum by (l) (...), topk(k, ...) and so on.
func (p *pqParser) aggregation(param pqType) (pqType, error) {
	op := p.next().text
	var g *grouping
	clause := func() error {
		if w := p.peek().text; w == "by" || w == "without" {
			if g != nil {
				return fmt.Errorf("%s: two grouping clauses", op)
			}
			p.next()
			labels, err := p.labelList()
			if err != nil {
				return err
			}
			g = &grouping{what: w, labels: labels}
		}
		return nil
	}
	if err := clause(); err != nil {
		return 0, err
	}
	if err := p.expect("("); err != nil {
		return 0, err
	}
	first := len(p.selectors)
	if param != 0 {
		typ, err := p.expr(0)
		if err != nil {
			return 0, err
		}
		if typ != param {
			return 0, fmt.Errorf("%s: parameter is a %v, want a %v", op, typ, param)
		}
		if err := p.expect(","); err != nil {
			return 0, err
		}
	}
	typ, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	if typ != pqVector {
		return 0, fmt.Errorf("%s of a %v", op, typ)
	}
	if err := p.expect(")"); err != nil {
		return 0, err
	}
	if err := clause(); err != nil {
		return 0, err
	}
	if g != nil {
		g.selectors = slices.Clone(p.selectors[first:])
		p.groupings = append(p.groupings, *g)
	}
	return pqVector, nil
}

// labelList parses "(a, b)".
func (p *pqParser) labelList() ([]string, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var labels []string
	for p.peek().text != ")" {
		if len(labels) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
			if p.peek().text == ")" {
				break
			}
		}
		t := p.next()
		if !isName(t) || strings.Contains(t.text, ":") {
			return nil, fmt.Errorf("want a label name, got %q", t.text)
		}
		labels = append(labels, t.text)
	}
	return labels, p.expect(")")
}

// selector parses the matchers of a vector selector named name (or of
// one without a name, whose matchers must then name it).
func (p *pqParser) selector(name string) error {
	sel := selector{name: name, matchers: map[string]string{}}
	if p.peek().text == "{" {
		p.next()
		for p.peek().text != "}" {
			if len(sel.matchers) > 0 || sel.nameRE != nil {
				if err := p.expect(","); err != nil {
					return err
				}
				if p.peek().text == "}" {
					break
				}
			}
			label := p.next()
			if !isName(label) || strings.Contains(label.text, ":") {
				return fmt.Errorf("want a label name, got %q", label.text)
			}
			op := p.next().text
			value := p.next()
			if !value.str {
				return fmt.Errorf("label %s: want a string, got %q", label.text, value.text)
			}
			switch op {
			case "=", "!=":
			case "=~", "!~":
				if _, err := regexp.Compile("^(?:" + value.text + ")$"); err != nil {
					return fmt.Errorf("label %s: %v", label.text, err)
				}
			default:
				return fmt.Errorf("label %s: want a matcher operator, got %q", label.text, op)
			}
			switch {
			case label.text != "__name__":
				if _, dup := sel.matchers[label.text]; dup {
					return fmt.Errorf("label %s matched twice", label.text)
				}
				sel.matchers[label.text] = value.text
			case op == "=" && name == "":
				sel.name = value.text
			case op == "=~" && name == "":
				sel.nameRE = regexp.MustCompile("^(?:" + value.text + ")$")
			default:
				return fmt.Errorf("__name__ %s in a selector with a name", op)
			}
		}
		p.next()
	}
	if sel.name == "" && sel.nameRE == nil {
		return fmt.Errorf("a selector without a metric name")
	}
	p.selectors = append(p.selectors, sel)
	return nil
}
