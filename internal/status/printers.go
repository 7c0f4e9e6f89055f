package status

import (
	"fmt"
	"io"
	"strings"

	"github.com/polykube/polykube/internal/status/render"
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
		return render.JSON(w, r)
	case FormatYAML:
		return render.YAML(w, r)
	case FormatTable, "":
		return printFleetTable(w, r, view, opts)
	}
	return ValidateFormat(format)
}

func phaseColor(phase string) string {
	switch phase {
	case "Ready", "True", ReasonOK:
		return render.Green
	case "Degraded", "False", "absent":
		return render.Red
	case "Progressing", "Pending", "Unknown":
		return render.Yellow
	}
	return render.None
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
	sections := []func(io.Writer, Report, PrintOptions) error{clustersTable, disagreementsList}
	if len(r.Failures) > 0 {
		sections = append(sections, failuresList)
	}
	if len(r.Notices) > 0 {
		sections = append(sections, noticesList)
	}
	for _, section := range append(sections, notReadyList, summaryLine) {
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
	rows := [][]render.Cell{render.Header(head...)}
	for _, wl := range r.Workloads {
		row := []render.Cell{render.Text(wl.Name), render.Text(wl.Namespace)}
		for _, x := range wl.Clusters {
			row = append(row, workloadCell(x))
		}
		total := fmt.Sprintf("%d/%d", wl.ReadyTotal, wl.DesiredTotal)
		if extra := failoverExtra(wl); extra > 0 {
			total += fmt.Sprintf("+%d", extra)
		}
		if wl.Ready {
			row = append(row, render.Colored(total, render.Green))
		} else {
			row = append(row, render.Colored(total, render.Yellow))
		}
		rows = append(rows, row)
	}
	return render.Table(w, rows, opts.Color)
}

// failoverExtra sums the extra replicas the clusters with an active failover run.
func failoverExtra(wl WorkloadRow) int32 {
	var extra int32
	for _, x := range wl.Clusters {
		if f := x.Failover; f != nil && f.Active {
			extra += f.EffectiveReplicas - f.BaseReplicas
		}
	}
	return extra
}

func workloadCell(x WorkloadInCluster) render.Cell {
	switch {
	case x.State == StateUnknown:
		return render.Colored("?", render.Red)
	case x.State == StateAbsent:
		return render.Colored("absent", render.Red)
	case x.Suspended:
		// Frozen on purpose: what it ran when suspended, not a failure.
		return render.Colored(fmt.Sprintf("%d/%d Suspended", x.Ready, x.Desired), render.Yellow)
	case !x.Targeted && x.Desired == 0 && x.Ready == 0:
		return render.Text("-")
	case x.ReportedCluster == "":
		return render.Colored("no status", render.Yellow)
	}
	phase := x.Phase
	if phase == "" {
		phase = "-"
	}
	if x.Failure != nil {
		// What the operator fails at matters more than the phase of what still runs.
		return render.Colored(fmt.Sprintf("%d/%d %s", x.Ready, x.Desired, x.Failure.Reason), render.Red)
	}
	if a := x.Autoscaling; a != nil {
		// Desired is the HPA's current choice; its bounds follow it.
		return render.Colored(fmt.Sprintf("%d/%d (%d..%d) %s", x.Ready, x.Desired, a.MinReplicas, a.MaxReplicas, phase), phaseColor(x.Phase))
	}
	desired := fmt.Sprint(x.Desired)
	if f := x.Failover; f != nil && f.Active {
		// The Deployment runs base + extra: READY/BASE+EXTRA.
		desired = fmt.Sprintf("%d+%d", f.BaseReplicas, f.EffectiveReplicas-f.BaseReplicas)
	}
	return render.Colored(fmt.Sprintf("%d/%s %s", x.Ready, desired, phase), phaseColor(x.Phase))
}

func federationTable(w io.Writer, r Report, opts PrintOptions) error {
	if len(r.Federations) == 0 {
		_, err := io.WriteString(w, "No Federations found in the reachable clusters.\n")
		return err
	}
	rows := [][]render.Cell{render.Header("FEDERATION", "CLUSTER", "CONTEXT", "LOCAL", "READY", "MEMBERS", "MESH CHECKS")}
	for _, f := range r.Federations {
		for _, cp := range f.Copies {
			if cp.State != StatePresent {
				rows = append(rows, []render.Cell{render.Text(f.Name), render.Text(cp.Cluster), render.Text(cp.Context), render.Text("-"), render.Colored(strings.ToLower(cp.State), render.Red), render.Text("-"), render.Text("-")})
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
			checksCell := render.Colored(fmt.Sprintf("%d passed", passed), render.Green)
			if len(failing) > 0 {
				checksCell = render.Colored(strings.Join(failing, " "), render.Red)
			} else if passed == 0 {
				checksCell = render.Colored("none reported", render.Yellow)
			}
			ready := orDash(cp.Ready)
			rows = append(rows, []render.Cell{render.Text(f.Name), render.Text(cp.Cluster), render.Text(cp.Context), render.Text(orDash(cp.LocalCluster)),
				render.Colored(ready, phaseColor(ready)), render.Text(strings.Join(cp.Members, ",")), checksCell})
		}
	}
	return render.Table(w, rows, opts.Color)
}

func membersTable(w io.Writer, r Report, opts PrintOptions) error {
	if len(r.Members) == 0 {
		_, err := io.WriteString(w, "No ClusterMembers found in the reachable clusters.\n")
		return err
	}
	rows := [][]render.Cell{render.Header("MEMBER", "PROVIDER", "REGION", "CLUSTER-ID", "LOCAL-CONTEXT", "IN-ROSTER", "SEEN-BY")}
	for _, m := range r.Members {
		local := render.Colored(orDash(m.LocalContext), render.None)
		if m.LocalContext == "" {
			local.Color = render.Yellow
		}
		rows = append(rows, []render.Cell{render.Text(m.Name), render.Text(orDash(m.Provider)), render.Text(orDash(m.Region)), render.Text(fmt.Sprint(m.ClusterID)),
			local, render.Text(orDash(strings.Join(m.InRoster, ","))), render.Text(strings.Join(m.SeenBy, ","))})
	}
	return render.Table(w, rows, opts.Color)
}

func clustersTable(w io.Writer, r Report, opts PrintOptions) error {
	rows := [][]render.Cell{render.Header("CONTEXT", "CLUSTER", "STATUS", "VERSION", "WORKLOADS", "MESSAGE")}
	for _, cl := range r.Clusters {
		msg := cl.Message
		if len(cl.Warnings) > 0 {
			msg = strings.TrimPrefix(msg+"; "+strings.Join(cl.Warnings, "; "), "; ")
		}
		status := render.Colored(cl.Reason, phaseColor(cl.Reason))
		if cl.Reason != ReasonOK {
			status.Color = render.Red
		}
		wls := "-"
		if cl.Reachable {
			wls = fmt.Sprint(cl.Workloads)
		}
		rows = append(rows, []render.Cell{render.Text(cl.Context), render.Text(cl.Cluster), status, render.Text(orDash(cl.OperatorVersion)), render.Text(wls), render.Text(msg)})
	}
	return render.Table(w, rows, opts.Color)
}

func disagreementsList(w io.Writer, r Report, opts PrintOptions) error {
	if len(r.Disagreements) == 0 {
		_, err := io.WriteString(w, "No disagreements between the reachable clusters.\n")
		return err
	}
	rows := [][]render.Cell{render.Header("DISAGREEMENT", "OBJECT", "CLUSTERS", "DETAIL")}
	for _, d := range r.Disagreements {
		rows = append(rows, []render.Cell{render.Colored(d.Kind, render.Yellow), render.Text(d.Object), render.Text(strings.Join(d.Clusters, ",")), render.Text(d.Message)})
	}
	return render.Table(w, rows, opts.Color)
}

// noticesList prints the informational findings, such as an active failover.
func noticesList(w io.Writer, r Report, opts PrintOptions) error {
	rows := [][]render.Cell{render.Header("NOTICE", "OBJECT", "CLUSTERS", "DETAIL")}
	for _, n := range r.Notices {
		kind := render.Colored(n.Kind, render.Green)
		if n.Level == LevelWarning {
			kind = render.Colored(n.Kind+" (warning)", render.Yellow)
		}
		rows = append(rows, []render.Cell{kind, render.Text(n.Object), render.Text(strings.Join(n.Clusters, ",")), render.Text(n.Message)})
	}
	return render.Table(w, rows, opts.Color)
}

// failuresList prints what the operators report failing, one line per object and cluster.
func failuresList(w io.Writer, r Report, opts PrintOptions) error {
	rows := [][]render.Cell{render.Header("FAILING", "CLUSTER", "REASON", "SINCE", "MESSAGE")}
	for _, f := range r.Failures {
		since := "-"
		if f.Since != nil {
			since = f.Since.UTC().Format("2006-01-02T15:04:05Z")
		}
		reason := f.Reason
		if f.Condition != "Ready" {
			reason = f.Condition + "=False " + reason
		}
		rows = append(rows, []render.Cell{render.Text(f.Kind + " " + f.objectName()), render.Text(f.Cluster),
			render.Colored(reason, render.Red), render.Text(since), render.Text(f.Message)})
	}
	return render.Table(w, rows, opts.Color)
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
		msg := "Everything reported is ready.\n"
		if len(r.Failures) > 0 {
			msg = "Everything reported is ready, apart from the failures above.\n"
		}
		_, err := io.WriteString(w, msg)
		return err
	}
	rows := [][]render.Cell{render.Header("NOT READY")}
	for _, l := range lines {
		rows = append(rows, []render.Cell{render.Colored(l, render.Yellow)})
	}
	return render.Table(w, rows, opts.Color)
}

func summaryLine(w io.Writer, r Report, opts PrintOptions) error {
	s := r.Summary
	failing := ""
	if len(s.Failing) > 0 {
		failing = fmt.Sprintf(", %d failing", len(s.Failing))
	}
	text := fmt.Sprintf("%d of %d clusters read, %d disagreements, %d not ready%s: %s (exit %d)",
		s.ClustersReachable, s.ClustersQueried, s.Disagreements, len(s.NotReady), failing, ExitMeaning(s.ExitCode), s.ExitCode)
	cl := render.Green
	if !s.Healthy {
		cl = render.Red
	}
	return render.Table(w, [][]render.Cell{{render.Colored(text, cl)}}, opts.Color)
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
	case ExitFailing:
		return "an operator reports a failure"
	}
	return "unknown"
}
