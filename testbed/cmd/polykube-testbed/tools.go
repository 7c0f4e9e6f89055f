package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/internal/toolchain"
)

// toolsReport is what `tools` found, before any printing.
type toolsReport struct {
	CacheDir string      `json:"cacheDir"`
	Tools    []toolEntry `json:"tools"`
}

type toolEntry struct {
	toolchain.Resolved
	// Error is set when the tool could not be resolved ("missing" when building was off).
	Error string `json:"error,omitempty"`
}

func newToolsCmd() *cobra.Command {
	var (
		build  bool
		output string
	)
	newToolchain := func(cmd *cobra.Command) (*toolchain.Toolchain, error) {
		return toolchain.New(toolchain.Options{Build: build, Log: cmd.ErrOrStderr()})
	}
	cmd := &cobra.Command{
		Use:   "tools [GROUP|TOOL...]",
		Short: "Resolve (and with --build, build) the pinned binaries of the hermetic tier",
		Long: `Resolve the pinned binaries of the hermetic tier and print where they are.

Each tool is taken from POLYKUBE_<TOOL>_BINARY, else from $PATH when it reports the pinned
version, else from the cache ${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/polykube}.
With --build a missing tool is built from Go module source through the Go module proxy
(minutes per tool on a cold machine), or downloaded from upstream when that fails.

Groups: ` + strings.Join(toolchain.Groups(), ", ") + ` (default: all).`,
		Example: `  polykube-testbed tools                    # what is there, what is missing
  polykube-testbed tools --build envtest    # build etcd and kube-apiserver
  polykube-testbed tools -o json kwok`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("unknown output format %q: use table or json", output)
			}
			tc, err := newToolchain(cmd)
			if err != nil {
				return err
			}
			names, err := tc.Expand(args...)
			if err != nil {
				return err
			}
			report := toolsReport{CacheDir: tc.CacheDir()}
			var missing, failed []string
			for _, name := range names {
				r, err := tc.Resolve(cmd.Context(), name)
				entry := toolEntry{Resolved: r}
				switch {
				case err == nil:
				case errors.Is(err, toolchain.ErrMissing):
					entry.Resolved = toolchain.Resolved{Name: name, Version: tc.Tool(name).Version}
					entry.Error = "missing (run `make tools`)"
					missing = append(missing, name)
				default:
					entry.Resolved = toolchain.Resolved{Name: name, Version: tc.Tool(name).Version}
					entry.Error = err.Error()
					failed = append(failed, name)
					fmt.Fprintf(cmd.ErrOrStderr(), "%v\n", err)
				}
				report.Tools = append(report.Tools, entry)
				if cmd.Context().Err() != nil {
					break
				}
			}
			if err := printTools(cmd.OutOrStdout(), output, report); err != nil {
				return err
			}
			switch {
			case cmd.Context().Err() != nil:
				return cmd.Context().Err()
			case len(failed) > 0:
				return fmt.Errorf("could not resolve %s (see above)", strings.Join(failed, ", "))
			case len(missing) > 0:
				want := strings.Join(args, " ")
				if want == "" {
					want = "all"
				}
				return fmt.Errorf("missing %s: run `make tools` or `polykube-testbed tools --build %s` (a cold build takes minutes per tool)",
					strings.Join(missing, ", "), want)
			}
			return nil
		},
	}
	cmd.PersistentFlags().BoolVar(&build, "build", false, "build (or download) missing tools")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")

	cmd.AddCommand(&cobra.Command{
		Use:   "env [GROUP|TOOL...]",
		Short: "Print KUBEBUILDER_ASSETS and POLYKUBE_<TOOL>_BINARY lines for shells and Makefiles",
		Long: `Print KEY=value lines: KUBEBUILDER_ASSETS (a directory with kube-apiserver and etcd),
POLYKUBE_<TOOL>_BINARY for each tool asked for (default: the envtest group), and
POLYKUBE_FLUX_CRDS (the directory of the Flux CRD YAMLs) when a Flux controller is asked for.`,
		Example: `  export $(polykube-testbed tools env)
  polykube-testbed tools env --build kwok`,
		RunE: func(cmd *cobra.Command, args []string) error {
			tc, err := newToolchain(cmd)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				args = []string{"envtest"}
			}
			resolved, err := tc.ResolveAll(cmd.Context(), args...)
			if err != nil {
				return err
			}
			assets, err := tc.EnvtestAssets(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "KUBEBUILDER_ASSETS=%s\n", assets)
			flux := false
			for _, r := range resolved {
				fmt.Fprintf(w, "%s=%s\n", tc.Tool(r.Name).EnvVar(), r.Path)
				flux = flux || r.Name == toolchain.SourceController || r.Name == toolchain.KustomizeController
			}
			if flux {
				crds, err := tc.FluxCRDs(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "POLYKUBE_FLUX_CRDS=%s\n", crds)
			}
			return nil
		},
	})
	return cmd
}

// printTools renders the report as a table or JSON.
func printTools(w io.Writer, format string, r toolsReport) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tVERSION\tSOURCE\tPATH")
	for _, t := range r.Tools {
		if t.Error != "" {
			msg := t.Error
			if !strings.HasPrefix(msg, "missing") {
				msg = "error: " + strings.SplitN(msg, "\n", 2)[0]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t\n", t.Name, t.Version, msg)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Version, t.Source, t.Path)
	}
	return tw.Flush()
}
