package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
)

func newStatusCmd() *cobra.Command {
	var (
		rf     runFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the health of every cluster and add-on of a run (exit 1 when something is unhealthy)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := rf.open(cmd)
			if err != nil {
				return err
			}
			r := b.Status(cmd.Context())
			switch output {
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			case "table":
				printReport(cmd.OutOrStdout(), r)
			default:
				return fmt.Errorf("unknown output format %q: use table or json", output)
			}
			if !r.Healthy() {
				return errors.New("some components are unhealthy")
			}
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

func mark(h *testbed.Health) string {
	switch {
	case h == nil:
		return "-"
	case h.OK:
		return "✓ " + h.Detail
	default:
		return "✗ " + short(h.Detail)
	}
}

func printReport(w io.Writer, r *testbed.Report) {
	fmt.Fprintf(w, "Run %s (provider %s) in %s\n", r.Run, r.Provider, r.Dir)
	if r.Git != nil {
		fmt.Fprintf(w, "Git server: %s\n", mark(r.Git))
		if r.Revision != "" {
			fmt.Fprintf(w, "Revision:   %s\n", r.Revision)
		}
	}
	if r.MeshMirror != nil {
		fmt.Fprintf(w, "Mesh mirror: %s\n", mark(r.MeshMirror))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// The delivery column is Flux's, or Argo CD's when the run delivers with it.
	delivery := "FLUX"
	for _, c := range r.Clusters {
		if c.ArgoCD != nil {
			delivery = "ARGO CD"
		}
	}
	fmt.Fprintf(tw, "\nCLUSTER\tAPI SERVER\t%s\tOPERATOR\n", delivery)
	for _, c := range r.Clusters {
		api := c.APIServer
		d := c.Flux
		if c.ArgoCD != nil {
			d = c.ArgoCD
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, mark(&api), mark(d), mark(c.Operator))
	}
	tw.Flush()
}

// short keeps a table cell readable; -o json has the whole message.
func short(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 70 {
		return string(r[:35]) + "…" + string(r[len(r)-34:])
	}
	return s
}
