// Command operator is the Polykube operator. One runs in every member cluster with only that
// cluster's credentials, started with --cluster-name; it reconciles that cluster's slice of
// the Workloads, ServiceEndpoints and DatastoreBindings Flux delivers from Git, and checks the
// ClusterMember/Federation roster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/polykube/polykube/internal/version"
	"github.com/polykube/polykube/operator/internal/flags"
	"github.com/polykube/polykube/operator/internal/setup"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "polykube-operator:", err)
		os.Exit(1)
	}
}

func run() error {
	parsed, err := flags.Parse(flag.CommandLine, os.Args[1:])
	if err != nil {
		return err
	}
	if parsed.Version {
		fmt.Println("polykube-operator", version.Get())
		return nil
	}
	parsed.Options.OperatorVersion = version.Version
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&parsed.Zap)))
	log := ctrl.Log.WithName("setup")
	info := version.Get()
	log.Info("Polykube operator", "version", info.Version, "commit", info.Commit, "go", info.GoVersion, "platform", info.Platform)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load the kubeconfig (--kubeconfig, $KUBECONFIG, in-cluster): %w", err)
	}
	// Before any controller runs: refuse to act as another member than the one this cluster is
	// pinned to (operator/internal/identity).
	if err := setup.PinIdentity(context.Background(), cfg, parsed.Options); err != nil {
		return err
	}
	// Cilium must name this cluster as its ClusterMember is named, or the peers' capacity
	// failover cannot see it. A mismatch is reported, not fatal: nothing else depends on it.
	switch err := setup.CheckMeshName(context.Background(), cfg, parsed.Options); {
	case errors.Is(err, setup.ErrCiliumClusterName):
		log.Error(err, "Cilium's cluster-name is not this cluster's ClusterMember name")
	case err != nil:
		log.Info("Could not compare Cilium's cluster-name with --cluster-name; if this cluster runs Cilium, check that its cluster.name is the ClusterMember name", "error", err.Error())
	}
	mgr, err := setup.New(cfg, parsed.Options)
	if err != nil {
		return err
	}
	log.Info("Starting the operator", "clusterName", parsed.Options.ClusterName, "leaderElect", parsed.Options.LeaderElect)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run the manager: %w", err)
	}
	return nil
}
