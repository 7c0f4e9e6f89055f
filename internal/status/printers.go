package status

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Output formats.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// Views of a fleet Report in table form. JSON and YAML always print the whole Report.
const (
	ViewWorkloads  = "workloads"
	ViewFederation = "federation"
	ViewMembers    = "members"
)

// PrintOptions tune the table printer.
type PrintOptions struct {
	// Color adds ANSI colours; the CLI sets it only when stdout is a terminal and NO_COLOR is unset.
	Color bool
}

// ValidateFormat returns a UsageError for an unknown -o value.
func ValidateFormat(f string) error {
	switch f {
	case FormatTable, FormatJSON, FormatYAML:
		return nil
	}
	return Usagef("unknown output format %q: use -o table, -o json or -o yaml", f)
}

// PrintReport renders r in format; view selects the tables of the table format.
func PrintReport(w io.Writer, r Report, format, view string, opts PrintOptions) error {
	switch format {
	case FormatJSON:
		return writeJSON(w, r)
	case FormatYAML:
		return writeYAML(w, r)
	case FormatTable, "":
		return printFleetTable(w, r, view, opts)
	}
	return ValidateFormat(format)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode YAML: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// ANSI colours.
const (
	colorNone   = ""
	colorGreen  = "\x1b[32m"
	colorYellow = "\x1b[33m"
	colorRed    = "\x1b[31m"
	colorBold   = "\x1b[1m"
	colorReset  = "\x1b[0m"
)

type cell struct {
	text  string
	color string
}

func c(text string) cell              { return cell{text: text} }
func colored(text, color string) cell { return cell{text: text, color: color} }
func header(names ...string) []cell   { return cellsOf(colorBold, names...) }
func cellsOf(cl string, s ...string) []cell {
	out := make([]cell, len(s))
	for i, v := range s {
		out[i] = cell{text: v, color: cl}
	}
	return out
}

// renderTable pads on visible width, so colour codes never break the alignment.
func renderTable(w io.Writer, rows [][]cell, color bool) error {
	widths := []int{}
	for _, r := range rows {
		for i, x := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			if n := utf8.RuneCountInString(x.text); n > widths[i] {
				widths[i] = n
			}
		}
	}
	var b strings.Builder
	for _, r := range rows {
		last := len(r) - 1
		for last > 0 && r[last].text == "" {
			last--
		}
		r = r[:last+1]
		for i, x := range r {
			text := x.text
			if color && x.color != colorNone {
				text = x.color + text + colorReset
			}
			b.WriteString(text)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(x.text)+2))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func phaseColor(phase string) string {
	switch phase {
	case "Ready", "True", ReasonOK:
		return colorGreen
	case "Degraded", "False", "absent":
		return colorRed
	case "Progressing", "Pending", "Unknown":
		return colorYellow
	}
	return colorNone
}

func printFleetTable(w io.Writer, r Report, view string, opts PrintOptions) error {
	var err error
	switch view {
	case ViewWorkloads, "":
		err = workloadsTable(w, r, opts)
	case ViewFederation:
		err = federationTable(w, r, opts)
	case ViewMembers:
		err = membersTable(w, r, opts)
	default:
		return Usagef("unknown view %q: use workloads, federation or members", view)
	}
	if err != nil {
		return err
	}
	for _, section := range []func(io.Writer, Report, PrintOptions) error{clustersTable, disagreementsList, notReadyList, summaryLine} {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := section(w, r, opts); err != nil {
			return err
		}
	}
	return nil
}

// columnNames are the per-cluster column headers: the cluster names, or cluster(context) when
// two contexts report the same cluster name.
func columnNames(r Report) []string {
	count := map[string]int{}
	for _, cl := range r.Clusters {
		count[cl.Cluster]++
	}
	out := make([]string, len(r.Clusters))
	for i, cl := range r.Clusters {
		out[i] = cl.Cluster
		if count[cl.Cluster] > 1 {
			out[i] = fmt.Sprintf("%s(%s)", cl.Cluster, cl.Context)
		}
	}
	return out
}

func workloadsTable(w io.Writer, r Report, opts PrintOptions) error {
	if len(r.Workloads) == 0 {
		scope := "in namespace " + r.Namespace
		if r.Namespace == "" {
			scope = "in any namespace"
		}
		_, err := fmt.Fprintf(w, "No Workloads found %s of the reachable clusters.\n", scope)
		return err
	}
	head := []string{"WORKLOAD", "NAMESPACE"}
	for _, n := range columnNames(r) {
		head = append(head, strings.ToUpper(n))
	}
	head = append(head, "TOTAL")
	rows := [][]cell{header(head...)}
	for _, wl := range r.Workloads {
		row := []cell{c(wl.Name), c(wl.Namespace)}
		for _, x := range wl.Clusters {
			row = append(row, workloadCell(x))
		}
		total := fmt.Sprintf("%d/%d", wl.ReadyTotal, wl.DesiredTotal)
		if wl.Ready {
			row = append(row, colored(total, colorGreen))
		} else {
			row = append(row, colored(total, colorYellow))
		}
		rows = append(rows, row)
	}
	return renderTable(w, rows, opts.Color)
}

func workloadCell(x WorkloadInCluster) cell {
	switch {
	case x.State == StateUnknown:
		return colored("?", colorRed)
	case x.State == StateAbsent:
		return colored("absent", colorRed)
	case !x.Targeted && x.Desired == 0 && x.Ready == 0:
		return c("-")
	case x.ReportedCluster == "":
		return colored("no status", colorYellow)
	}
	phase := x.Phase
	if phase == "" {
		phase = "-"
	}
	return colored(fmt.Sprintf("%d/%d %s", x.Ready, x.Desired, phase), phaseColor(x.Phase))
}

func federationTable(w io.Writer, r Report, opts PrintOptions) error {
	if len(r.Federations) == 0 {
		_, err := io.WriteString(w, "No Federations found in the reachable clusters.\n")
		return err
	}
	rows := [][]cell{header("FEDERATION", "CLUSTER", "CONTEXT", "LOCAL", "READY", "MEMBERS", "MESH CHECKS")}
	for _, f := range r.Federations {
		for _, cp := range f.Copies {
			if cp.State != StatePresent {
				rows = append(rows, []cell{c(f.Name), c(cp.Cluster), c(cp.Context), c("-"), colored(strings.ToLower(cp.State), colorRed), c("-"), c("-")})
				continue
			}
			var failing []string
			passed := 0
			for _, ch := range cp.Checks {
				if ch.Type == "Ready" {
					continue
				}
				if ch.Status == "True" {
					passed++
				} else {
					failing = append(failing, fmt.Sprintf("%s=%s(%s)", ch.Type, ch.Status, ch.Reason))
				}
			}
			checksCell := colored(fmt.Sprintf("%d passed", passed), colorGreen)
			if len(failing) > 0 {
				checksCell = colored(strings.Join(failing, " "), colorRed)
			} else if passed == 0 {
				checksCell = colored("none reported", colorYellow)
			}
			ready := orDash(cp.Ready)
			rows = append(rows, []cell{c(f.Name), c(cp.Cluster), c(cp.Context), c(orDash(cp.LocalCluster)),
				colored(ready, phaseColor(ready)), c(strings.Join(cp.Members, ",")), checksCell})
		}
	}
	return renderTable(w, rows, opts.Color)
}

func membersTable(w io.Writer, r Report, opts PrintOptions) error {
	if len(r.Members) == 0 {
		_, err := io.WriteString(w, "No ClusterMembers found in the reachable clusters.\n")
		return err
	}
	rows := [][]cell{header("MEMBER", "PROVIDER", "REGION", "CLUSTER-ID", "LOCAL-CONTEXT", "IN-ROSTER", "SEEN-BY")}
	for _, m := range r.Members {
		local := colored(orDash(m.LocalContext), colorNone)
		if m.LocalContext == "" {
			local.color = colorYellow
		}
		rows = append(rows, []cell{c(m.Name), c(orDash(m.Provider)), c(orDash(m.Region)), c(fmt.Sprint(m.ClusterID)),
			local, c(orDash(strings.Join(m.InRoster, ","))), c(strings.Join(m.SeenBy, ","))})
	}
	return renderTable(w, rows, opts.Color)
}

func clustersTable(w io.Writer, r Report, opts PrintOptions) error {
	rows := [][]cell{header("CONTEXT", "CLUSTER", "STATUS", "WORKLOADS", "MESSAGE")}
	for _, cl := range r.Clusters {
		msg := cl.Message
		if len(cl.Warnings) > 0 {
			msg = strings.TrimPrefix(msg+"; "+strings.Join(cl.Warnings, "; "), "; ")
		}
		status := colored(cl.Reason, phaseColor(cl.Reason))
		if cl.Reason != ReasonOK {
			status.color = colorRed
		}
		wls := "-"
		if cl.Reachable {
			wls = fmt.Sprint(cl.Workloads)
		}
		rows = append(rows, []cell{c(cl.Context), c(cl.Cluster), status, c(wls), c(msg)})
	}
	return renderTable(w, rows, opts.Color)
}

func disagreementsList(w io.Writer, r Report, opts PrintOptions) error {
	if len(r.Disagreements) == 0 {
		_, err := io.WriteString(w, "No disagreements between the reachable clusters.\n")
		return err
	}
	rows := [][]cell{header("DISAGREEMENT", "OBJECT", "CLUSTERS", "DETAIL")}
	for _, d := range r.Disagreements {
		rows = append(rows, []cell{colored(d.Kind, colorYellow), c(d.Object), c(strings.Join(d.Clusters, ",")), c(d.Message)})
	}
	return renderTable(w, rows, opts.Color)
}

func notReadyList(w io.Writer, r Report, opts PrintOptions) error {
	var lines []string
	for _, wl := range r.Workloads {
		for _, why := range wl.NotReady {
			lines = append(lines, fmt.Sprintf("Workload %s/%s: %s", wl.Namespace, wl.Name, why))
		}
	}
	for _, n := range r.Summary.NotReady {
		if !strings.HasPrefix(n, "Workload ") {
			lines = append(lines, n)
		}
	}
	if len(lines) == 0 {
		_, err := io.WriteString(w, "Everything reported is ready.\n")
		return err
	}
	rows := [][]cell{header("NOT READY")}
	for _, l := range lines {
		rows = append(rows, []cell{colored(l, colorYellow)})
	}
	return renderTable(w, rows, opts.Color)
}

func summaryLine(w io.Writer, r Report, opts PrintOptions) error {
	s := r.Summary
	text := fmt.Sprintf("%d of %d clusters read, %d disagreements, %d not ready: %s (exit %d)",
		s.ClustersReachable, s.ClustersQueried, s.Disagreements, len(s.NotReady), ExitMeaning(s.ExitCode), s.ExitCode)
	cl := colorGreen
	if !s.Healthy {
		cl = colorRed
	}
	return renderTable(w, [][]cell{{colored(text, cl)}}, opts.Color)
}

// ExitMeaning describes an exit code in a few words.
func ExitMeaning(code int) string {
	switch code {
	case ExitOK:
		return "healthy and agreeing"
	case ExitInternal:
		return "internal error"
	case ExitUsage:
		return "usage error"
	case ExitUnreachable:
		return "some cluster could not be read"
	case ExitDisagreement:
		return "clusters disagree"
	case ExitNotReady:
		return "something is not ready"
	case ExitInvalidManifest:
		return "invalid manifest"
	}
	return "unknown"
}
