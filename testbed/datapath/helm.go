package datapath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// HelmRelease is one release of a chart from a directory, installed or upgraded in one cluster
// with the Helm SDK (helm.sh/helm/v3), as `helm upgrade --install` does, so that no helm CLI is
// needed and the release is an ordinary Helm release afterwards (`helm list`, `helm get values`
// work when the CLI is there).
type HelmRelease struct {
	// Kubeconfig and Context name the cluster.
	Kubeconfig, Context string
	// Namespace and Name name the release.
	Namespace, Name string
	// Chart is the chart's directory.
	Chart string
	// Values are the release's values (nothing else is merged in: the chart's defaults and these).
	Values map[string]any
	// Timeout bounds the install or upgrade (Helm does not wait for readiness here: the test bed
	// waits itself, with messages that say what is missing).
	Timeout time.Duration
	// Log receives Helm's debug lines; nil drops them.
	Log io.Writer
}

// UpgradeInstall installs the release when the cluster has none of that name, and upgrades it
// otherwise (the values given replace the release's values). It returns the revision.
func (r HelmRelease) UpgradeInstall(ctx context.Context) (int, error) {
	chrt, err := loader.Load(r.Chart)
	if err != nil {
		return 0, fmt.Errorf("load the Helm chart %s: %w", r.Chart, err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Context, flags.Namespace = &r.Kubeconfig, &r.Context, &r.Namespace
	cfg := new(action.Configuration)
	logf := func(format string, v ...any) {
		if r.Log != nil {
			fmt.Fprintf(r.Log, "  helm: "+strings.TrimSuffix(format, "\n")+"\n", v...)
		}
	}
	if err := cfg.Init(flags, r.Namespace, "secret", logf); err != nil {
		return 0, fmt.Errorf("helm in %s: %w", r.Context, err)
	}
	hist := action.NewHistory(cfg)
	hist.Max = 1
	_, err = hist.Run(r.Name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		in := action.NewInstall(cfg)
		in.Namespace, in.ReleaseName, in.Timeout = r.Namespace, r.Name, r.Timeout
		rel, err := in.RunWithContext(ctx, chrt, r.Values)
		if err != nil {
			return 0, fmt.Errorf("helm install %s (chart %s %s) in %s: %w", r.Name, chrt.Name(), chrt.Metadata.Version, r.Context, err)
		}
		return rel.Version, nil
	case err != nil:
		return 0, fmt.Errorf("helm history %s in %s: %w", r.Name, r.Context, err)
	}
	up := action.NewUpgrade(cfg)
	up.Namespace, up.Timeout = r.Namespace, r.Timeout
	rel, err := up.RunWithContext(ctx, r.Name, chrt, r.Values)
	if err != nil {
		return 0, fmt.Errorf("helm upgrade %s (chart %s %s) in %s: %w", r.Name, chrt.Name(), chrt.Metadata.Version, r.Context, err)
	}
	return rel.Version, nil
}
