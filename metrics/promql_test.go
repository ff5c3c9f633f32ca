package metrics

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// A parser for the part of PromQL the dashboard and the alert rules use,
// for their test. The module has no PromQL parser (the one of
// github.com/prometheus/prometheus would bring that whole server in as a
// dependency), so this one follows the grammar of the Prometheus
// documentation closely enough to reject what Prometheus rejects in these
// files: unknown functions and aggregations, wrong argument counts, a range
// vector where an instant vector is wanted and the reverse, bad durations,
// bad label matchers, unbalanced brackets, trailing input. It also collects
// the metric names for the check that each one is exported.

// valueType is the type of a PromQL expression.
type valueType uint8

const (
	tScalar valueType = iota
	tVector
	tMatrix
	tString
)

func (t valueType) String() string {
	return [...]string{"scalar", "instant vector", "range vector", "string"}[t]
}

// functions are the PromQL functions this parser knows, with their
// argument types.
var functions = map[string][]valueType{
	"rate": {tMatrix}, "irate": {tMatrix}, "increase": {tMatrix}, "delta": {tMatrix},
	"avg_over_time": {tMatrix}, "max_over_time": {tMatrix}, "min_over_time": {tMatrix},
	"abs": {tVector}, "clamp_min": {tVector, tScalar}, "clamp_max": {tVector, tScalar},
	"histogram_quantile": {tScalar, tVector}, "vector": {tScalar}, "scalar": {tVector},
}

// aggregations are the PromQL aggregation operators this parser knows.
var aggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "count": true}

// promql is the parser's state: the query and the position in it.
type promql struct {
	s       string
	i       int
	metrics []string
}

// parsePromQL parses q and returns the metric names it selects.
func parsePromQL(q string) (names []string, err error) {
	p := &promql{s: q}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	p.expr(0)
	p.space()
	if p.i != len(p.s) {
		p.fail("unexpected %q", p.s[p.i:])
	}
	return p.metrics, nil
}

type parseError string

func (e parseError) Error() string { return string(e) }

func (p *promql) fail(format string, args ...any) {
	panic(parseError(fmt.Sprintf("at %d: ", p.i) + fmt.Sprintf(format, args...)))
}

func (p *promql) space() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

// peek reports whether the input goes on with tok (a word must end there).
func (p *promql) peek(tok string) bool {
	p.space()
	if !strings.HasPrefix(p.s[p.i:], tok) {
		return false
	}
	if isIdent(tok[len(tok)-1]) {
		end := p.i + len(tok)
		return end == len(p.s) || !isIdent(p.s[end])
	}
	return true
}

func (p *promql) accept(tok string) bool {
	if p.peek(tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *promql) expect(tok string) {
	if !p.accept(tok) {
		p.fail("want %q", tok)
	}
}

func isIdent(c byte) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func (p *promql) ident() string {
	p.space()
	j := p.i
	for j < len(p.s) && isIdent(p.s[j]) {
		j++
	}
	if j == p.i || '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.fail("want a name")
	}
	id := p.s[p.i:j]
	p.i = j
	return id
}

// The binary operators by precedence, lowest first.
var levels = [][]string{
	{"or"}, {"and", "unless"}, {"==", "!=", ">=", "<=", ">", "<"}, {"+", "-"}, {"*", "/", "%"}, {"^"},
}

// expr parses an expression whose operators bind at least as tightly as
// levels[level].
func (p *promql) expr(level int) valueType {
	if level == len(levels) {
		return p.unary()
	}
	left := p.expr(level + 1)
	for {
		op := ""
		for _, o := range levels[level] {
			if p.accept(o) {
				op = o
				break
			}
		}
		if op == "" {
			return left
		}
		comparison := level == 2
		if comparison {
			p.accept("bool")
		}
		if p.accept("on") || p.accept("ignoring") {
			p.labels()
			if p.accept("group_left") || p.accept("group_right") {
				if p.peek("(") {
					p.labels()
				}
			}
		}
		right := p.expr(level + 1)
		if left == tMatrix || right == tMatrix || left == tString || right == tString {
			p.fail("%s %s %s: binary operators take scalars and instant vectors", left, op, right)
		}
		if level <= 1 && (left != tVector || right != tVector) {
			p.fail("%q takes two instant vectors", op)
		}
		if left == tVector || right == tVector {
			left = tVector
		} else {
			left = tScalar
		}
	}
}

func (p *promql) unary() valueType {
	if p.accept("-") || p.accept("+") {
		t := p.unary()
		if t != tScalar && t != tVector {
			p.fail("unary sign on a %s", t)
		}
		return t
	}
	return p.primary()
}

func (p *promql) primary() valueType {
	p.space()
	if p.i == len(p.s) {
		p.fail("unexpected end")
	}
	c := p.s[p.i]
	switch {
	case c == '(':
		p.i++
		t := p.expr(0)
		p.expect(")")
		return p.rangeSuffix(t)
	case c == '"' || c == '\'':
		p.str()
		return tString
	case c == '{':
		return p.selector("")
	case '0' <= c && c <= '9' || c == '.':
		j := p.i
		for j < len(p.s) && (isIdent(p.s[j]) || p.s[j] == '.') {
			j++
		}
		if _, err := strconv.ParseFloat(p.s[p.i:j], 64); err != nil {
			p.fail("bad number %q", p.s[p.i:j])
		}
		p.i = j
		return tScalar
	}
	name := p.ident()
	if aggregations[name] {
		return p.aggregation()
	}
	if args, ok := functions[name]; ok && p.peek("(") {
		p.expect("(")
		for k, want := range args {
			if k > 0 {
				p.expect(",")
			}
			if got := p.expr(0); got != want {
				p.fail("%s argument %d is a %s, want a %s", name, k+1, got, want)
			}
		}
		p.expect(")")
		return tVector
	}
	if p.peek("(") {
		p.fail("unknown function %q", name)
	}
	return p.selector(name)
}

func (p *promql) aggregation() valueType {
	grouped := false
	if p.accept("by") || p.accept("without") {
		p.labels()
		grouped = true
	}
	p.expect("(")
	if t := p.expr(0); t != tVector {
		p.fail("aggregation over a %s", t)
	}
	p.expect(")")
	if !grouped && (p.accept("by") || p.accept("without")) {
		p.labels()
	}
	return tVector
}

// labels parses a parenthesised list of label names.
func (p *promql) labels() {
	p.expect("(")
	for !p.accept(")") {
		p.ident()
		if !p.peek(")") {
			p.expect(",")
		}
	}
}

func (p *promql) selector(name string) valueType {
	if name != "" {
		p.metrics = append(p.metrics, name)
	}
	if p.accept("{") {
		for !p.accept("}") {
			p.ident()
			if !(p.accept("=~") || p.accept("!~") || p.accept("!=") || p.accept("=")) {
				p.fail("want a label matcher")
			}
			p.str()
			if !p.peek("}") {
				p.expect(",")
			}
		}
	} else if name == "" {
		p.fail("want a selector")
	}
	return p.rangeSuffix(tVector)
}

// rangeSuffix parses an optional [duration] (a subquery when t is not a
// plain selector is not used here) and offset.
func (p *promql) rangeSuffix(t valueType) valueType {
	if p.accept("[") {
		if t != tVector {
			p.fail("range of a %s", t)
		}
		p.duration()
		p.expect("]")
		t = tMatrix
	}
	if p.accept("offset") {
		p.duration()
	}
	return t
}

func (p *promql) duration() {
	p.space()
	j := p.i
	for j < len(p.s) && (isIdent(p.s[j])) {
		j++
	}
	d := p.s[p.i:j]
	rest := d
	for rest != "" {
		k := 0
		for k < len(rest) && '0' <= rest[k] && rest[k] <= '9' {
			k++
		}
		if k == 0 {
			p.fail("bad duration %q", d)
		}
		rest = rest[k:]
		unit := ""
		for _, u := range []string{"ms", "s", "m", "h", "d", "w", "y"} {
			if strings.HasPrefix(rest, u) {
				unit = u
				break
			}
		}
		if unit == "" {
			p.fail("bad duration %q", d)
		}
		rest = rest[len(unit):]
	}
	if d == "" {
		p.fail("want a duration")
	}
	p.i = j
}

func (p *promql) str() {
	p.space()
	if p.i == len(p.s) || p.s[p.i] != '"' && p.s[p.i] != '\'' {
		p.fail("want a string")
	}
	q := p.s[p.i]
	for j := p.i + 1; j < len(p.s); j++ {
		switch p.s[j] {
		case '\\':
			j++
		case q:
			p.i = j + 1
			return
		}
	}
	p.fail("unterminated string")
}
