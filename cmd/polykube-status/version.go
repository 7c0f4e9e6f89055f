package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/version"
)

// versionCommand prints the version make release stamped into this binary. It reads no
// kubeconfig and contacts no cluster.
func (c *cli) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "The version, commit and platform this binary was built for (contacts no cluster)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch c.output {
			case status.FormatTable:
				_, err := fmt.Fprintln(c.stdout, info.String())
				return err
			case status.FormatJSON:
				out, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(c.stdout, string(out))
				return err
			case status.FormatYAML:
				out, err := yaml.Marshal(info)
				if err != nil {
					return err
				}
				_, err = c.stdout.Write(out)
				return err
			default:
				return status.Usagef("--output %q: use table, json or yaml", c.output)
			}
		},
	}
}
