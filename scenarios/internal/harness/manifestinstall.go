package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/cmd/apply"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/polykube/polykube/internal/release"
	"github.com/polykube/polykube/testbed/regserver"
)

// A user without Flux or Helm installs Polykube with the release's install.yaml: its header
// says to set the cluster name, in one place, and to `kubectl apply --server-side -f` it. The
// scenario does that with kubectl's own apply code (k8s.io/kubectl), server-side and, once,
// client-side (`kubectl apply -f`). The test bed's clusters already run Polykube from Flux
// (see HandOverOperator), so the server-side apply takes the fields Flux owned
// (--force-conflicts), as moving a cluster from Flux to the file would.

// installYAML is the release's install.yaml with the cluster name set, or left as the
// release wrote it when name is "", written into the scenario's part of the release directory.
func (sc *Scenario) installYAML(name string) (string, error) {
	r, err := sc.publishedRelease()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(r.dist, release.InstallFile))
	if err != nil {
		return "", fmt.Errorf("the release's %s: %w", release.InstallFile, err)
	}
	if name != "" {
		// What the file's header tells a user to do, its sed: the placeholder replaced (in the
		// Deployment's argument, and in the header that shows it).
		arg := "- --cluster-name=" + release.ClusterNamePlaceholder + "\n"
		if n := bytes.Count(data, []byte(arg)); n != 1 {
			return "", fmt.Errorf("the release's %s holds the argument %q %d times; its header says once", release.InstallFile, strings.TrimSpace(arg), n)
		}
		data = bytes.ReplaceAll(data, []byte(release.ClusterNamePlaceholder), []byte(name))
	}
	file := "placeholder"
	if name != "" {
		file = name
	}
	path := filepath.Join(r.dist, "install", sc.Namespace, file, release.InstallFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, data, 0o600)
}

// ApplyInstallYAML applies the release's install.yaml, with the cluster name set to name (left
// as it is when name is ""), to the cluster as `kubectl apply --server-side --force-conflicts
// -f install.yaml` does, or as `kubectl apply -f install.yaml` does (client-side).
func (sc *Scenario) ApplyInstallYAML(ctx context.Context, cluster, name string, serverSide bool) error {
	file, err := sc.installYAML(name)
	if err != nil {
		return err
	}
	kubeconfig, err := sc.kubeconfig(cluster)
	if err != nil {
		return err
	}
	set := map[string]string{"filename": file}
	command := "kubectl apply -f " + release.InstallFile
	if serverSide {
		set["server-side"], set["force-conflicts"] = "true", "true"
		command = "kubectl apply --server-side --force-conflicts -f " + release.InstallFile
	}
	out, err := kubectlApply(ctx, kubeconfig, set)
	if err != nil {
		return fmt.Errorf("%s in cluster %q: %w\n%s", command, cluster, err, out)
	}
	return nil
}

// kubectlApply runs kubectl's apply command (k8s.io/kubectl, the code of `kubectl apply`) with
// the flags set, against the kubeconfig, and returns what it printed.
func kubectlApply(ctx context.Context, kubeconfig string, set map[string]string) (string, error) {
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	config := genericclioptions.NewConfigFlags(true)
	config.KubeConfig = &kubeconfig
	f := cmdutil.NewFactory(config)
	flags := apply.NewApplyFlags(streams)
	cmd := &cobra.Command{Use: "apply"}
	cmd.SetContext(ctx)
	flags.AddFlags(cmd)
	for k, v := range set {
		if err := cmd.Flags().Set(k, v); err != nil {
			return "", fmt.Errorf("kubectl apply --%s=%s: %w", k, v, err)
		}
	}
	o, err := flags.ToOptions(f, cmd, "kubectl", nil)
	if err != nil {
		return out.String(), err
	}
	if err := o.Validate(); err != nil {
		return out.String(), err
	}
	err = o.Run()
	return out.String(), err
}

// refusalSays is what an operator refusing an unsubstituted cluster name must say: what is wrong,
// and which value to set for each way of installing.
var refusalSays = []string{"was not substituted", "with install.yaml, the --cluster-name argument of Deployment polykube-operator", "the chart's value clusterName"}

// CheckOperatorRefusesToStart checks that the operator the cluster's Deployment now names
// refuses to start, saying which value to set for each way of installing. Where the operator
// runs in the cluster, a new pod of the Deployment's template must exit with a failure, never
// ready, its log saying so. Where it runs on the host (kwok), the test bed pulls the image the
// Deployment names from the registry and runs its binary with the Deployment's arguments, as
// the kubelet would start the container: it must exit at once, before contacting the API
// server.
func (sc *Scenario) CheckOperatorRefusesToStart(ctx context.Context, cluster string) error {
	r, err := sc.publishedRelease()
	if err != nil {
		return err
	}
	if _, host := sc.hostOperators(); !host {
		before, ok := r.before[cluster]
		if !ok {
			return fmt.Errorf("nothing was recorded of cluster %q's operator: hand it over from Flux first", cluster)
		}
		return sc.checkOperatorPodRefuses(ctx, cluster, before.pods, refusalSays)
	}
	ctr, err := sc.appliedOperatorContainer(ctx, cluster)
	if err != nil {
		return err
	}
	bin := filepath.Join(r.dist, "pulled", sc.Namespace, cluster, "refused", "operator")
	if err := regserver.PullEntrypoint(ctx, ctr.Image, "linux", runtime.GOARCH, bin); err != nil {
		return fmt.Errorf("pull the operator of cluster %q: %w", cluster, err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(runCtx, bin, ctr.Args...)
	// No kubeconfig and no in-cluster service account: a refusal must not need the API server.
	cmd.Env = []string{"HOME=" + filepath.Dir(bin)}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case runCtx.Err() != nil:
		return fmt.Errorf("the operator of cluster %q, started with %v, did not exit within 30s: it should refuse to start\n%s", cluster, ctr.Args, out)
	case err == nil:
		return fmt.Errorf("the operator of cluster %q, started with %v, exited 0: it should refuse to start\n%s", cluster, ctr.Args, out)
	case !errors.As(err, &exit):
		return fmt.Errorf("run the operator of cluster %q: %w", cluster, err)
	}
	var errs []error
	for _, want := range refusalSays {
		if !strings.Contains(string(out), want) {
			errs = append(errs, fmt.Errorf("the operator of cluster %q refused to start (%v) without saying %q:\n%s", cluster, err, want, out))
		}
	}
	return errors.Join(errs...)
}

// CheckOperatorBinaryKept checks that the cluster's operator is still the binary it ran before
// HandOverOperator or PointAtRelease: the same binary on the host, or, where the operator runs
// in the cluster, the same pods, still running and ready with the same image (the rollout of a
// refused operator replaced none of them).
func (sc *Scenario) CheckOperatorBinaryKept(ctx context.Context, cluster string) error {
	before, now, err := sc.operatorBeforeAndNow(ctx, cluster)
	if err != nil {
		return err
	}
	return operatorKept(cluster, before, now)
}
