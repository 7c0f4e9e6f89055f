package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/soak"
	"github.com/polykube/polykube/testbed/topology"
)

func newSoakCmd() *cobra.Command {
	var (
		rf                          runFlags
		file                        string
		duration, maxHold, converge time.Duration
		seed                        uint64
		keep, buildTools            bool
	)
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Walk a federation through random faults and edits, checking that nothing is lost (make soak)",
		Long: `Bring up a federation (the default topology on kwok, run "soak"), commit the soak's
Workloads (static, weighted, label-selected, bound to a Secret) and, until --duration is over,
take seeded random steps: stop and start an API server, an operator, Flux or the Git server;
scale a Workload and relabel a ClusterMember through Git (also while a fault holds); delete a
binding's Secret and restore it. All along it checks that no Deployment of a targeted Workload
is deleted, no unchanged Workload's pods roll, no Deployment runs below its allocation, every
step converges within --converge-within once repaired, and polykube-status's exit code agrees.

Each violation is printed with its step; the same --seed replays the same walk. The command
exits 1 when a violation was found. The federation is torn down at the end unless --keep.`,
		Example: `  polykube-testbed soak --duration 1h --seed 7
  make soak SOAK_DURATION=10m SOAK_SEED=7`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			top := topology.Default()
			if file != "" {
				var err error
				if top, err = topology.Load(file); err != nil {
					return err
				}
			}
			if rf.run == "" {
				rf.run = "soak"
			}
			if !cmd.Flags().Changed("seed") {
				seed = uint64(time.Now().UnixNano())
			}
			opts := rf.bedOptions(cmd, top)
			opts.BuildTools = buildTools
			b, err := testbed.OpenBed(opts)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			errOut := cmd.ErrOrStderr()
			fmt.Fprintf(errOut, "Soak: seed %d, %s on %q (%d clusters, provider %s)\n", seed, duration, rf.run, len(top.Clusters), b.Topology().Provider)
			if err := b.Up(ctx); err != nil {
				return err
			}
			report, runErr := soak.Run(ctx, b, soak.Options{Duration: duration, Seed: seed, MaxHold: maxHold, ConvergeWithin: converge, Log: errOut})
			if report != nil {
				fmt.Fprint(cmd.OutOrStdout(), report.Summary())
			}
			if runErr != nil {
				fmt.Fprintf(errOut, "the soak stopped: %v\nthe federation is kept for a look: polykube-testbed status --run %s; tear it down with polykube-testbed down --run %s\n", runErr, rf.run, rf.run)
				return runErr
			}
			if !keep {
				if err := b.Down(ctx); err != nil {
					return err
				}
			}
			if len(report.Violations) > 0 {
				return errors.New("the soak found violations (above); replay with the same --seed")
			}
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVarP(&file, "topology", "t", "", "topology file (default: the embedded examples/local-multicluster/topology.yaml)")
	cmd.Flags().DurationVar(&duration, "duration", 10*time.Minute, "how long to start new steps")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "the walk's seed (default: from the clock, printed)")
	cmd.Flags().DurationVar(&maxHold, "max-hold", 30*time.Second, "the longest a fault or a missing Secret lasts")
	cmd.Flags().DurationVar(&converge, "converge-within", 3*time.Minute, "the bound on convergence after each step")
	cmd.Flags().BoolVar(&keep, "keep", os.Getenv("KEEP") == "1", "keep the federation at the end (also KEEP=1)")
	cmd.Flags().BoolVar(&buildTools, "build-tools", false, "build missing toolchain binaries from Go module source (minutes)")
	return cmd
}
