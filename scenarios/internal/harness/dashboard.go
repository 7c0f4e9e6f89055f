package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// panelQuery is one query of a dashboard panel.
type panelQuery struct {
	Panel, RefID, Expr string
}

// dashboardQueries reads every panel's queries (rows' nested panels too) from a Grafana
// dashboard.
func dashboardQueries(path string) ([]panelQuery, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the dashboard: %w", err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", path, err)
	}
	var out []panelQuery
	var walk func([]json.RawMessage) error
	walk = func(ps []json.RawMessage) error {
		for _, r := range ps {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				return fmt.Errorf("dashboard %s: %w", path, err)
			}
			for _, t := range p.Targets {
				out = append(out, panelQuery{p.Title, t.RefID, t.Expr})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dashboard %s has no panel queries", path)
	}
	return out, nil
}

// AwaitDashboardSeries waits until every query of every panel of the shipped dashboard
// returns at least one series from the Prometheus of one of the clusters: the dashboard is one
// view per cluster, and a fleet's incident shows in the clusters it touches (failover in the
// survivors, a drift where it was made). A query that stays empty names its panel.
func (sc *Scenario) AwaitDashboardSeries(ctx context.Context) error {
	queries, err := dashboardQueries(sc.Config.Dashboard)
	if err != nil {
		return err
	}
	clusters := sc.Fed.Clusters()
	for _, cl := range clusters {
		if _, err := sc.prometheus(cl); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("each of the %d queries of the dashboard's panels to return a series from a cluster's Prometheus", len(queries))
	return Await(ctx, sc.Config.Wait(WaitAlert), what, func(ctx context.Context) error {
		var empty []string
		for _, q := range queries {
			found := false
			for _, cl := range clusters {
				p, err := sc.prometheus(cl)
				if err != nil {
					return err
				}
				samples, err := p.Query(ctx, q.Expr)
				if err != nil {
					return fmt.Errorf("panel %q query %s in cluster %q: %w", q.Panel, q.RefID, cl, err)
				}
				if len(samples) > 0 {
					found = true
					break
				}
			}
			if !found {
				empty = append(empty, fmt.Sprintf("%q (%s: %s)", q.Panel, q.RefID, q.Expr))
			}
		}
		if len(empty) > 0 {
			return fmt.Errorf("no series in any cluster for %d panel queries: %s", len(empty), strings.Join(empty, "; "))
		}
		return nil
	})
}
