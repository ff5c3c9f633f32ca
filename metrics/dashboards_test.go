package metrics

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// exportedNames returns every Prometheus series name the package exports
// with the default namespace.
func exportedNames() map[string]bool {
	names := map[string]bool{}
	for _, s := range append([]series{retired, resets, maxResources, maxIdle, leaked}, table...) {
		names["wardpool_"+s.prom] = true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		names["wardpool_acquire_duration_seconds"+suffix] = true // WaitHistogram
	}
	return names
}

// grafanaVars replaces Grafana's variables with what Grafana puts there, so
// that the queries are PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$pool", ".*", "$instance", ".*")

// checkQuery parses q and checks that it names only exported series, and
// at least one.
func checkQuery(t *testing.T, where, q string, exported map[string]bool) {
	t.Helper()
	names, err := parsePromQL(grafanaVars.Replace(q))
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, q, err)
		return
	}
	if len(names) == 0 {
		t.Errorf("%s: %q names no series", where, q)
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("%s: %q names %s, which is not exported", where, q, n)
		}
	}
}

func TestAlertRules(t *testing.T) {
	f, err := os.Open("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exported := exportedNames()
	// The file keeps each rule's expr on one line, so it is read line by
	// line rather than with a YAML library the module does not have.
	alert := regexp.MustCompile(`^\s+- alert: (Wardpool[A-Za-z]+)$`)
	expr := regexp.MustCompile(`^\s+expr: (.+)$`)
	var alerts, exprs []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.Contains(line, "\t") {
			t.Errorf("alerts.yml:%d: a tab (YAML wants spaces)", n)
		}
		if m := alert.FindStringSubmatch(line); m != nil {
			alerts = append(alerts, m[1])
		}
		if m := expr.FindStringSubmatch(line); m != nil {
			exprs = append(exprs, m[1])
			checkQuery(t, "alerts.yml:"+strconv.Itoa(n), m[1], exported)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(alerts) == 0 || len(alerts) != len(exprs) {
		t.Errorf("%d alerts and %d exprs", len(alerts), len(exprs))
	}
	// The README lists every alert.
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if !strings.Contains(string(readme), "`"+a+"`") {
			t.Errorf("README.md does not list the alert %s", a)
		}
	}
}

func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr, LegendFormat string }
		}
		Templating struct {
			List []struct {
				Name       string
				Definition string
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	exported := exportedNames()
	n := 0
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkQuery(t, "panel "+p.Title, tg.Expr, exported)
			n++
			// Every selector picks the chosen pools and instances, and
			// every line says which: replicas of one pool (one per
			// instance) draw apart.
			sel := strings.Count(tg.Expr, "{")
			if strings.Count(tg.Expr, `{pool=~"$pool", instance=~"$instance"}`) != sel {
				t.Errorf("panel %s: %q does not select by $pool and $instance in each of its %d selectors", p.Title, tg.Expr, sel)
			}
			if strings.Contains(tg.Expr, "sum by") && !strings.Contains(tg.Expr, "instance") {
				t.Errorf("panel %s: %q sums the instances together", p.Title, tg.Expr)
			}
			if !strings.Contains(tg.LegendFormat, "{{pool}}") || !strings.Contains(tg.LegendFormat, "{{instance}}") {
				t.Errorf("panel %s: legend %q does not name the pool and the instance", p.Title, tg.LegendFormat)
			}
		}
	}
	// The pool and instance variables list their values from a series
	// that exists.
	values := map[string]*regexp.Regexp{
		"pool":     regexp.MustCompile(`^label_values\((wardpool_[a-z_]+), pool\)$`),
		"instance": regexp.MustCompile(`^label_values\((wardpool_[a-z_]+)\{pool=~"\$pool"\}, instance\)$`),
	}
	seen := 0
	for _, v := range d.Templating.List {
		re := values[v.Name]
		if re == nil {
			continue
		}
		seen++
		m := re.FindStringSubmatch(v.Definition)
		if m == nil || !exported[m[1]] {
			t.Errorf("the %s variable's query %q names no exported series", v.Name, v.Definition)
		}
	}
	if seen != len(values) {
		t.Errorf("%d of the variables %v in the dashboard", seen, values)
	}
	if n < 10 {
		t.Errorf("only %d queries in the dashboard", n)
	}
	// What the alerts watch, an operator sees drawn.
	for _, name := range []string{"wardpool_waiting_acquires", "wardpool_resets_total", "wardpool_budget_alone"} {
		drawn := false
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				drawn = drawn || strings.Contains(tg.Expr, name+"{")
			}
		}
		if !drawn {
			t.Errorf("no panel draws %s", name)
		}
	}
}

// TestPromQLParser holds the test's parser to PromQL: it takes what
// Prometheus takes and refuses what Prometheus refuses.
func TestPromQLParser(t *testing.T) {
	good := []string{
		`wardpool_busy_resources / wardpool_max_resources >= 0.9`,
		`rate(wardpool_made_total{pool=~"a|b", x!="y"}[5m]) > bool 0`,
		`sum by (pool, reason) (rate(wardpool_retired_total[1h30m]))`,
		`sum(rate(wardpool_made_total[5m])) without (pool)`,
		`increase(wardpool_leaks_total[15m]) > 0 or wardpool_leaked_loans > 0`,
		`-(wardpool_idle_resources - 1) * 2 ^ 3`,
		`histogram_quantile(0.99, wardpool_idle_resources offset 5m)`,
		`wardpool_idle_resources / on (pool) group_left wardpool_max_resources`,
	}
	for _, q := range good {
		if _, err := parsePromQL(q); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
	bad := []string{
		`rate(wardpool_made_total)`,               // rate of an instant vector
		`wardpool_made_total[5m] / 2`,             // arithmetic on a range vector
		`rate(wardpool_made_total[5q])`,           // bad duration
		`rates(wardpool_made_total[5m])`,          // unknown function
		`sum by pool (wardpool_made_total)`,       // labels not parenthesised
		`wardpool_made_total{pool="a"`,            // unclosed matcher
		`wardpool_made_total{pool~"a"}`,           // bad matcher
		`(wardpool_made_total`,                    // unbalanced
		`wardpool_made_total wardpool_made_total`, // trailing input
		`1 and 2`,                        // set operator on scalars
		`clamp_min(wardpool_made_total)`, // too few arguments
		``,
	}
	for _, q := range bad {
		if _, err := parsePromQL(q); err == nil {
			t.Errorf("%q parsed", q)
		}
	}
	names, _ := parsePromQL(`a_total / on (x) b + sum(rate(c[1m]))`)
	if strings.Join(names, ",") != "a_total,b,c" {
		t.Errorf("names %v", names)
	}
}
