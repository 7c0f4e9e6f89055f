package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
)

// Pickle is one runnable scenario (an Outline gives one per example row) as parsed from a
// feature file, with what the runner needs to select it and the sync check needs to match it.
type Pickle struct {
	Feature string
	Name    string
	// Location is file:line of the scenario (or of its example row).
	Location string
	Tags     []string
	Steps    []*messages.PickleStep
	// WIPReason is the text of a "# wip: …" comment right above the @wip tag of the scenario
	// or its feature; empty when there is none.
	WIPReason string
}

// LoadFeatures parses every *.feature file in dir.
func LoadFeatures(dir string) ([]Pickle, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.feature"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.feature files in %s", dir)
	}
	var out []Pickle
	for _, f := range files {
		ps, err := parseFeature(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

func parseFeature(path string) ([]Pickle, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = src.Close() }()
	ids := (&messages.Incrementing{}).NewId
	doc, err := gherkin.ParseGherkinDocument(src, ids)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if doc.Feature == nil {
		return nil, fmt.Errorf("%s has no Feature", path)
	}
	comments := map[int64]string{}
	for _, c := range doc.Comments {
		comments[c.Location.Line] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c.Text), "#"))
	}
	wipAbove := func(tags []*messages.Tag, fallback int64) string {
		line := fallback
		for _, t := range tags {
			line = min(line, t.Location.Line)
		}
		for l := line - 1; ; l-- {
			c, ok := comments[l]
			if !ok {
				return ""
			}
			if r, ok := strings.CutPrefix(c, "wip:"); ok {
				return strings.TrimSpace(r)
			}
		}
	}
	featureWIP := wipAbove(doc.Feature.Tags, doc.Feature.Location.Line)
	// Where each scenario and example row starts, by AST node id.
	lines := map[string]int64{}
	wip := map[string]string{}
	var walk func(children []*messages.FeatureChild, ruleChildren []*messages.RuleChild)
	addScenario := func(s *messages.Scenario) {
		lines[s.Id] = s.Location.Line
		wip[s.Id] = wipAbove(s.Tags, s.Location.Line)
		for _, ex := range s.Examples {
			for _, row := range ex.TableBody {
				lines[row.Id] = row.Location.Line
			}
		}
	}
	walk = func(children []*messages.FeatureChild, ruleChildren []*messages.RuleChild) {
		for _, c := range children {
			if c.Scenario != nil {
				addScenario(c.Scenario)
			}
			if c.Rule != nil {
				walk(nil, c.Rule.Children)
			}
		}
		for _, c := range ruleChildren {
			if c.Scenario != nil {
				addScenario(c.Scenario)
			}
		}
	}
	walk(doc.Feature.Children, nil)

	var out []Pickle
	for _, p := range gherkin.Pickles(*doc, path, ids) {
		pk := Pickle{Feature: doc.Feature.Name, Name: p.Name, Steps: p.Steps, WIPReason: featureWIP}
		for _, t := range p.Tags {
			pk.Tags = append(pk.Tags, t.Name)
		}
		line := lines[p.AstNodeIds[0]]
		if len(p.AstNodeIds) > 1 {
			line = lines[p.AstNodeIds[len(p.AstNodeIds)-1]]
		}
		if r := wip[p.AstNodeIds[0]]; r != "" {
			pk.WIPReason = r
		}
		pk.Location = fmt.Sprintf("%s:%d", filepath.Base(path), line)
		out = append(out, pk)
	}
	return out, nil
}

// HasTag reports whether the pickle carries tag (with its @).
func (p Pickle) HasTag(tag string) bool { return slices.Contains(p.Tags, tag) }

// MatchTags evaluates a godog tag expression ("@a && ~@b,@c": ',' is or, '&&' is and, '~' is
// not) over tags, exactly as godog selects scenarios. An empty expression matches everything.
func MatchTags(expr string, tags []string) bool {
	if strings.TrimSpace(expr) == "" {
		return true
	}
	for _, alt := range strings.Split(expr, ",") {
		all := true
		for _, term := range strings.Split(alt, "&&") {
			term = strings.ReplaceAll(strings.TrimSpace(term), "@", "")
			neg := strings.HasPrefix(term, "~")
			term = strings.TrimPrefix(term, "~")
			has := slices.ContainsFunc(tags, func(t string) bool { return strings.TrimPrefix(t, "@") == term })
			if has == neg {
				all = false
			}
		}
		if all {
			return true
		}
	}
	return false
}

// AndTag narrows a tag expression to the scenarios that also carry tag: each alternative gets
// "&& tag".
func AndTag(expr, tag string) string {
	if strings.TrimSpace(expr) == "" {
		return tag
	}
	alts := strings.Split(expr, ",")
	for i, a := range alts {
		alts[i] = strings.TrimSpace(a) + " && " + tag
	}
	return strings.Join(alts, ",")
}

// AndNot narrows a tag expression so that it also excludes tag: each alternative gets
// "&& ~tag".
func AndNot(expr, tag string) string {
	if strings.TrimSpace(expr) == "" {
		return "~" + tag
	}
	alts := strings.Split(expr, ",")
	for i, a := range alts {
		alts[i] = strings.TrimSpace(a) + " && ~" + tag
	}
	return strings.Join(alts, ",")
}
