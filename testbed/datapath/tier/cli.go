package tier

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/topology"
)

// Extend adds the datapath tier to polykube-testbed's up, down, demo, logs, fault and git
// commit commands. With --provider kind or k0s (or, for up, a topology whose provider is kind
// or k0s; for demo also PROVIDER) they run this package; otherwise they run as before. up,
// demo, fault and git commit also get --dry-run, which prints every action and external
// command without running any.
func Extend(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "up":
			extendUp(c)
		case "down":
			extendWith(c, func(cmd *cobra.Command, b *Bed) error { return b.Down(cmd.Context()) })
		case "logs":
			extendWith(c, func(cmd *cobra.Command, b *Bed) error {
				dest := flagString(cmd, "output")
				if dest == "" {
					dest = "polykube-testbed-logs-" + time.Now().Format("20060102-150405")
				}
				err := b.Diagnose(cmd.Context(), dest)
				fmt.Fprintf(cmd.OutOrStdout(), "diagnostics in %s\n", dest)
				return err
			})
		case "demo":
			extendDemo(c)
		case "fault":
			extendFault(c)
		case "git":
			for _, sub := range c.Commands() {
				if sub.Name() == "commit" {
					extendGitCommit(sub)
				}
			}
		}
	}
}

func isDatapath(p string) bool { return p == topology.ProviderKind || p == topology.ProviderK0s }

func flagString(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func flagBool(cmd *cobra.Command, name string) bool { return flagString(cmd, name) == "true" }

// addProviderFlag adds --provider unless the command has it.
func addProviderFlag(c *cobra.Command) {
	if c.Flags().Lookup("provider") == nil {
		c.Flags().String("provider", "", "kind or k0s: the datapath tier (real nodes, Cilium ClusterMesh); default: the topology's provider")
	}
}

func addDatapathFlags(c *cobra.Command) {
	c.Flags().Bool("dry-run", false, "datapath tier: print every action and external command instead of running them")
	c.Flags().String("k0s-hosts", "", "datapath tier, k0s: a hosts file; installs k0s on those SSH hosts with k0sctl instead of in Docker")
	c.Flags().String("git-listen", "", "datapath tier, k0s on SSH hosts: host:port of this machine, reachable from the hosts, for the Git server")
	c.Flags().String("images", "", "datapath tier: upstream (pulled by the nodes) or local (built here by `polykube-testbed images build`; nothing pulled); default: the topology's images, else upstream")
}

// options builds the datapath run options from the command's flags.
func options(cmd *cobra.Command, top *topology.Topology, prov string) (Options, error) {
	stateRoot := flagString(cmd, "state-dir")
	if stateRoot == "" {
		var err error
		if stateRoot, err = testbed.DefaultStateRoot(); err != nil {
			return Options{}, err
		}
	}
	run := flagString(cmd, "run")
	if run == "" {
		run = "polykube"
		if top != nil {
			run = top.Name
		}
	}
	src := flagString(cmd, "source-dir")
	if src == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Options{}, err
		}
		if src, err = gobuild.FindRoot(wd); err != nil {
			return Options{}, fmt.Errorf("find the Polykube checkout (the datapath tier builds its image from it): %w; use --source-dir", err)
		}
	}
	self := ""
	if exe, err := os.Executable(); err == nil && !filepathHasGoBuild(exe) {
		self = exe
	}
	return Options{
		Topology:   top,
		Provider:   prov,
		Dir:        testbed.RunDir(stateRoot, run, prov),
		SourceDir:  src,
		DryRun:     flagBool(cmd, "dry-run"),
		Out:        cmd.ErrOrStderr(),
		K0sHosts:   flagString(cmd, "k0s-hosts"),
		GitListen:  flagString(cmd, "git-listen"),
		SelfBinary: self,
		Retain:     flagBool(cmd, "retain"),
		Images:     flagString(cmd, "images"),
	}, nil
}

func filepathHasGoBuild(p string) bool {
	return strings.Contains(p, string(filepath.Separator)+"go-build")
}

func loadTopology(cmd *cobra.Command) (*topology.Topology, error) {
	if file := flagString(cmd, "topology"); file != "" {
		return topology.Load(file)
	}
	return topology.Default(), nil
}

func extendUp(c *cobra.Command) {
	addProviderFlag(c)
	addDatapathFlags(c)
	orig := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		top, err := loadTopology(cmd)
		if err != nil {
			return err
		}
		prov := flagString(cmd, "provider")
		if prov == "" {
			prov = top.Provider
		}
		if !isDatapath(prov) {
			if flagBool(cmd, "dry-run") {
				return errors.New("--dry-run plans the datapath tier: add --provider kind or --provider k0s")
			}
			if prov != top.Provider {
				return fmt.Errorf("--provider %s: set `provider: %s` in the topology file instead (--provider only selects the datapath tier: kind or k0s)", prov, prov)
			}
			return orig(cmd, args)
		}
		opts, err := options(cmd, top, prov)
		if err != nil {
			return err
		}
		b, err := Open(opts)
		if err != nil {
			return err
		}
		if err := b.Up(cmd.Context()); err != nil {
			return err
		}
		if !opts.DryRun {
			b.printClusters(cmd)
		}
		return nil
	}
}

func (b *Bed) printClusters(cmd *cobra.Command) {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "\nThe federation %q is up on %s. Use a cluster with:\n", b.state.Topology.Name, b.state.Topology.Provider)
	for _, m := range b.env.Members {
		fmt.Fprintf(w, "  kubectl --kubeconfig %s --context %s get pods -A\n", m.Kubeconfig, m.Context)
	}
	if slices.Contains(b.state.Topology.Addons, topology.AddonGit) {
		fmt.Fprintf(w, "Git repository: %s\n", b.GitURL())
	}
	down := "polykube-testbed down --provider " + b.state.Topology.Provider
	if run := strings.TrimSuffix(filepath.Base(b.opts.Dir), "-"+b.state.Topology.Provider); run != "polykube" {
		down += " --run " + run
	}
	fmt.Fprintf(w, "Tear down: %s\n", down)
}

// extendWith makes a command that selects an existing run (down, logs) act on the datapath
// run when --provider is kind or k0s.
func extendWith(c *cobra.Command, fn func(*cobra.Command, *Bed) error) {
	addProviderFlag(c)
	orig := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		prov := flagString(cmd, "provider")
		if !isDatapath(prov) {
			return orig(cmd, args)
		}
		opts, err := options(cmd, nil, prov)
		if err != nil {
			return err
		}
		b, err := Open(opts)
		if err != nil {
			return err
		}
		return fn(cmd, b)
	}
}

func extendDemo(c *cobra.Command) {
	addProviderFlag(c)
	c.Flags().Bool("dry-run", false, "datapath tier: print every action and external command instead of running them")
	c.Flags().String("images", "", "datapath tier: upstream (pulled by the nodes; the default) or local (built here by `polykube-testbed images build`; nothing pulled); also IMAGES")
	orig := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		prov := flagString(cmd, "provider")
		if prov == "" {
			prov = os.Getenv("PROVIDER")
		}
		if !isDatapath(prov) {
			return orig(cmd, args)
		}
		opts, err := options(cmd, topology.Default(), prov)
		if err != nil {
			return err
		}
		if opts.Images == "" {
			opts.Images = os.Getenv("IMAGES")
		}
		b, err := Open(opts)
		if err != nil {
			return err
		}
		return b.Demo(cmd.Context(), cmd.OutOrStdout(), flagBool(cmd, "keep") || os.Getenv("KEEP") == "1")
	}
}
