package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestAlertRules checks the rules with promtool and runs their unit
// tests (alerts_test.yml), and checks the example scrape configuration,
// which loads them.
func TestAlertRules(t *testing.T) {
	promtool := need(t, "promtool")
	run(t, "prometheus", promtool, "check", "rules", "alerts.yml")
	out := run(t, "prometheus", promtool, "test", "rules", "alerts_test.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules did not report SUCCESS:\n%s", out)
	}
	run(t, "prometheus", promtool, "check", "config", "prometheus.yml")
}

// TestAlertRulesAreTested: every alert has a case in alerts_test.yml
// that expects it to fire.
func TestAlertRulesAreTested(t *testing.T) {
	fired := map[string]bool{}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	decodeOne(t, "prometheus/alerts_test.yml", &tests)
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
	}
	rules := alertRules(t)
	for _, r := range rules {
		if !fired[r.Alert] {
			t.Errorf("alert %s has no test in alerts_test.yml in which it fires", r.Alert)
		}
	}
	if len(rules) < 10 {
		t.Fatalf("only %d alert rules", len(rules))
	}
}

type rule struct {
	Alert string `yaml:"alert"`
	Expr  string `yaml:"expr"`
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	var file struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	decodeOne(t, "prometheus/alerts.yml", &file)
	var rules []rule
	for _, g := range file.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// dashboard is the part of the Grafana JSON the checks read.
type dashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Datasource source `json:"datasource"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type source struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource source `json:"datasource"`
	Targets    []struct {
		Datasource source `json:"datasource"`
		Expr       string `json:"expr"`
		RefID      string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(read(t, "grafana/decant.json"), &d); err != nil {
		t.Fatalf("grafana/decant.json: %v", err)
	}
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

const datasource = "${DS_PROMETHEUS}"

// TestDashboardShape: the dashboard imports with a Prometheus chosen at
// import time (${DS_PROMETHEUS}) and filters every query by the pipeline
// variable.
func TestDashboardShape(t *testing.T) {
	d := readDashboard(t)
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs %+v, want one prometheus datasource DS_PROMETHEUS", d.Inputs)
	}
	var pipeline bool
	for _, v := range d.Templating.List {
		if v.Name == "pipeline" && v.Datasource.UID == datasource && strings.Contains(v.Definition, "pipeline)") {
			pipeline = true
		}
	}
	if !pipeline {
		t.Errorf("no pipeline variable over %s in %+v", datasource, d.Templating.List)
	}
	queries := 0
	for _, p := range allPanels(d.Panels) {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != datasource {
			t.Errorf("panel %q: datasource %+v, want %s", p.Title, p.Datasource, datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			if q.Datasource.UID != datasource {
				t.Errorf("panel %q query %s: datasource %+v", p.Title, q.RefID, q.Datasource)
			}
			if strings.Contains(q.Expr, "decant_") && strings.Count(q.Expr, `pipeline=~"$pipeline"`) < strings.Count(q.Expr, "decant_") {
				t.Errorf("panel %q query %s does not filter every series by $pipeline: %s", p.Title, q.RefID, q.Expr)
			}
		}
	}
	if queries < 20 {
		t.Errorf("only %d queries", queries)
	}
}

// grafanaVariables are what Grafana puts in for its variables before a
// query reaches Prometheus.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h", "$pipeline", "shop")

// TestDashboardQueriesParse has promtool parse every query of the
// dashboard, made into recording rules of a temporary rules file
// (promtool has no command that parses a lone expression).
func TestDashboardQueriesParse(t *testing.T) {
	promtool := need(t, "promtool")
	type record struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var records []record
	for _, p := range allPanels(readDashboard(t).Panels) {
		for _, q := range p.Targets {
			records = append(records, record{fmt.Sprintf("dashboard:panel_%d_%s", p.ID, q.RefID), grafanaVariables.Replace(q.Expr)})
		}
	}
	file := map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": records}}}
	data, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := run(t, ".", promtool, "check", "rules", path)
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(records)); !strings.Contains(out, want) {
		t.Fatalf("promtool check rules on the dashboard's queries: want %q in\n%s", want, out)
	}
}

var metricPattern = regexp.MustCompile(`\bdecant_[a-z0-9_]+`)

// usedMetrics lists the decant_* names in exprs.
func usedMetrics(exprs []string) map[string]bool {
	used := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metricPattern.FindAllString(e, -1) {
			used[m] = true
		}
	}
	return used
}

// TestMetricNames: the alerts and the dashboard query only the metrics
// decant exports, and the dashboard shows what an operator watches.
func TestMetricNames(t *testing.T) {
	var alertExprs, dashExprs []string
	for _, r := range alertRules(t) {
		alertExprs = append(alertExprs, r.Expr)
	}
	for _, p := range allPanels(readDashboard(t).Panels) {
		for _, q := range p.Targets {
			dashExprs = append(dashExprs, q.Expr)
		}
	}
	for file, exprs := range map[string][]string{"alerts.yml": alertExprs, "decant.json": dashExprs} {
		var unknown []string
		for m := range usedMetrics(exprs) {
			if !metricNames[m] {
				unknown = append(unknown, m)
			}
		}
		sort.Strings(unknown)
		if len(unknown) > 0 {
			t.Errorf("%s queries metrics decant does not export: %v", file, unknown)
		}
	}
	shown := usedMetrics(dashExprs)
	for _, m := range []string{
		"decant_lag_seconds", "decant_lag_bytes", "decant_transactions_applied_total", "decant_changes_applied_total",
		"decant_target_commit_duration_seconds_bucket", "decant_errors_total", "decant_reconnects_total",
		"decant_slot_retained_wal_bytes", "decant_slot_wal_status", "decant_webhook_events_total",
	} {
		if !shown[m] {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
	alerted := usedMetrics(alertExprs)
	for _, m := range []string{"decant_up", "decant_streaming", "decant_lag_seconds", "decant_slot_wal_status",
		"decant_slot_retained_wal_bytes", "decant_webhook_events_total", "decant_errors_total"} {
		if !alerted[m] {
			t.Errorf("no alert on %s", m)
		}
	}
}
