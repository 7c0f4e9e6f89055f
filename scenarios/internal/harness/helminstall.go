package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/release"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// A user installs Polykube's Helm chart from a registry, as `helm push` put it there and as
// the README says: `helm install polykube oci://<registry>/polykube/charts/polykube --version
// X.Y.Z --set clusterName=NAME`. The scenario does that with the Helm SDK (the code of the helm
// command) against the test bed's registry. The test bed's clusters already run Polykube,
// delivered by Flux from Git; the scenario first takes that delivery away from the cluster
// (HandOverOperator) and installs with Helm's take-ownership, so the chart's objects replace
// Flux's in place, as a user moving a cluster from one install to another would do.

// HelmRelease is the Helm release name the scenario installs, the README's.
const HelmRelease = "polykube"

// helmReleaseNamespace is the namespace of the Helm release's records: the README's command
// passes none, so the kubeconfig's default (the chart's objects go to polykube-system whatever it is).
const helmReleaseNamespace = "default"

// ChartRepository is where the scenario pushes the release's chart in the registry, as `helm push
// polykube-X.Y.Z.tgz oci://<registry>/polykube/charts` names it.
func ChartRepository(registryAddr string) string {
	return registryAddr + "/polykube/charts/" + release.ChartName
}

// chartVersion is the chart's version for a release version (vX.Y.Z → X.Y.Z).
func chartVersion(version string) string { return strings.TrimPrefix(version, "v") }

// PushChart pushes the release's chart to the test bed's registry with the Helm SDK's registry
// client, as `helm push polykube-X.Y.Z.tgz oci://<registry>/polykube/charts --plain-http` does.
func (sc *Scenario) PushChart(ctx context.Context) error {
	r, err := sc.publishedRelease()
	if err != nil {
		return err
	}
	addr, err := sc.registryAddr()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(r.dist, release.ChartFile(r.manifest.Version)))
	if err != nil {
		return fmt.Errorf("the release's chart: %w", err)
	}
	rc, err := helmRegistryClient(r.dist)
	if err != nil {
		return err
	}
	ref := ChartRepository(addr) + ":" + chartVersion(r.manifest.Version)
	if _, err := rc.Push(data, ref); err != nil {
		return fmt.Errorf("helm push %s to oci://%s: %w", release.ChartFile(r.manifest.Version), ref, err)
	}
	return nil
}

// helmRegistryClient is Helm's OCI registry client over plain HTTP (the test bed's registry),
// with a credentials file of its own in dir rather than the user's.
func helmRegistryClient(dir string) (*registry.Client, error) {
	var log bytes.Buffer
	rc, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(&log),
		registry.ClientOptCredentialsFile(filepath.Join(dir, "helm", "registry.json")))
	if err != nil {
		return nil, fmt.Errorf("Helm's registry client: %w", err)
	}
	return rc, nil
}

// writeKubeconfig writes cfg as a kubeconfig file, for the libraries of the helm and kubectl
// commands, which read one.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bed"] = &clientcmdapi.Cluster{
		Server: cfg.Host, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificate: cfg.CertFile, ClientCertificateData: cfg.CertData, ClientKey: cfg.KeyFile, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile, Username: cfg.Username, Password: cfg.Password,
	}
	kc.Contexts["bed"] = &clientcmdapi.Context{Cluster: "bed", AuthInfo: "admin", Namespace: helmReleaseNamespace}
	kc.CurrentContext = "bed"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}

// kubeconfig writes the cluster's admin kubeconfig into the scenario's part of the release
// directory and returns its path.
func (sc *Scenario) kubeconfig(cluster string) (string, error) {
	r, err := sc.publishedRelease()
	if err != nil {
		return "", err
	}
	cfg, err := sc.Fed.AdminConfig(cluster)
	if err != nil {
		return "", err
	}
	path := filepath.Join(r.dist, "kubeconfig", sc.Namespace, cluster)
	return path, writeKubeconfig(cfg, path)
}

// helmAction is the Helm SDK's configuration for the cluster, as the helm command builds it
// from a kubeconfig, with its log kept for the errors it explains.
func (sc *Scenario) helmAction(cluster string) (*action.Configuration, *bytes.Buffer, error) {
	path, err := sc.kubeconfig(cluster)
	if err != nil {
		return nil, nil, err
	}
	flags := genericclioptions.NewConfigFlags(false)
	ns := helmReleaseNamespace
	flags.KubeConfig, flags.Namespace = &path, &ns
	var log bytes.Buffer
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, helmReleaseNamespace, "secret", func(format string, v ...any) {
		fmt.Fprintf(&log, format+"\n", v...)
	}); err != nil {
		return nil, nil, fmt.Errorf("Helm's configuration for cluster %q: %w", cluster, err)
	}
	return cfg, &log, nil
}

// HelmInstall installs the release's chart from the test bed's registry into the cluster,
// as `helm install polykube oci://… --version X.Y.Z --plain-http --take-ownership` does, with
// clusterName set when clusterName is not empty and no other value: the image is the chart's
// default, the release's image in the registry, by digest.
func (sc *Scenario) HelmInstall(ctx context.Context, cluster, clusterName string) error {
	_, err := sc.helmInstall(ctx, cluster, clusterName)
	return err
}

func (sc *Scenario) helmInstall(ctx context.Context, cluster, clusterName string) (*bytes.Buffer, error) {
	r, err := sc.publishedRelease()
	if err != nil {
		return nil, err
	}
	addr, err := sc.registryAddr()
	if err != nil {
		return nil, err
	}
	cfg, log, err := sc.helmAction(cluster)
	if err != nil {
		return nil, err
	}
	rc, err := helmRegistryClient(r.dist)
	if err != nil {
		return nil, err
	}
	cfg.RegistryClient = rc
	install := action.NewInstall(cfg)
	install.SetRegistryClient(rc)
	install.ReleaseName, install.Namespace = HelmRelease, helmReleaseNamespace
	install.Version, install.PlainHTTP = chartVersion(r.manifest.Version), true
	// The cluster's objects were Flux's until HandOverOperator: Helm takes them over.
	install.TakeOwnership = true
	settings := cli.New()
	settings.RepositoryCache = filepath.Join(r.dist, "helm", "cache", sc.Namespace)
	settings.RepositoryConfig = filepath.Join(r.dist, "helm", "repositories.yaml")
	settings.RegistryConfig = filepath.Join(r.dist, "helm", "registry.json")
	chartRef := "oci://" + ChartRepository(addr)
	path, err := install.LocateChart(chartRef, settings)
	if err != nil {
		return log, fmt.Errorf("helm pull %s --version %s: %w", chartRef, install.Version, err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		return log, fmt.Errorf("load the chart pulled from %s: %w", chartRef, err)
	}
	values := map[string]any{}
	if clusterName != "" {
		values["clusterName"] = clusterName
	}
	if _, err := install.RunWithContext(ctx, ch, values); err != nil {
		return log, fmt.Errorf("helm install %s %s in cluster %q: %w", HelmRelease, chartRef, cluster, err)
	}
	sc.OnTeardown("helm uninstall "+HelmRelease+" in cluster "+cluster, func(context.Context) error {
		return sc.helmUninstall(cluster, true)
	})
	return log, nil
}

// CheckHelmInstallRefused installs the chart without clusterName and checks that Helm refuses
// at render with the chart's advice, and that the install left nothing: no Helm release, the
// operator Deployment untouched.
func (sc *Scenario) CheckHelmInstallRefused(ctx context.Context, cluster string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	before := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment}, before); err != nil {
		return fmt.Errorf("get the operator Deployment in cluster %q: %w", cluster, err)
	}
	_, err = sc.helmInstall(ctx, cluster, "")
	if err == nil {
		return fmt.Errorf("helm install without clusterName succeeded in cluster %q: the chart should refuse to render", cluster)
	}
	var errs []error
	for _, want := range []string{"clusterName is required", "--set clusterName=NAME"} {
		if !strings.Contains(err.Error(), want) {
			errs = append(errs, fmt.Errorf("helm install without clusterName failed without saying %q: %w", want, err))
		}
	}
	cfg, _, cerr := sc.helmAction(cluster)
	if cerr != nil {
		return cerr
	}
	if _, herr := cfg.Releases.History(HelmRelease); !errors.Is(herr, driver.ErrReleaseNotFound) {
		errs = append(errs, fmt.Errorf("the refused install left a Helm release %s in cluster %q (history: %v)", HelmRelease, cluster, herr))
	}
	after := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(before), after); err != nil {
		errs = append(errs, fmt.Errorf("get the operator Deployment in cluster %q after the refused install: %w", cluster, err))
	} else if after.ResourceVersion != before.ResourceVersion {
		errs = append(errs, fmt.Errorf("the refused install changed the operator Deployment in cluster %q (resourceVersion %s, before %s)", cluster, after.ResourceVersion, before.ResourceVersion))
	}
	return errors.Join(errs...)
}

// HelmUninstall runs `helm uninstall polykube` in the cluster.
func (sc *Scenario) HelmUninstall(_ context.Context, cluster string) error {
	return sc.helmUninstall(cluster, false)
}

func (sc *Scenario) helmUninstall(cluster string, ifInstalled bool) error {
	cfg, _, err := sc.helmAction(cluster)
	if err != nil {
		return err
	}
	if _, err := action.NewUninstall(cfg).Run(HelmRelease); err != nil {
		if ifInstalled && errors.Is(err, driver.ErrReleaseNotFound) {
			return nil
		}
		return fmt.Errorf("helm uninstall %s in cluster %q: %w", HelmRelease, cluster, err)
	}
	return nil
}

// CheckPolykubeKept checks that the cluster still has Polykube's CRDs, its namespace, and the
// scenario's Workload, none of them being deleted: what an uninstall must keep.
func (sc *Scenario) CheckPolykubeKept(ctx context.Context, cluster, workload string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	var errs []error
	if err := checkPolykubeCRDsKept(ctx, c); err != nil {
		errs = append(errs, fmt.Errorf("cluster %q: %w", cluster, err))
	}
	w := &polykubev1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, w); err != nil {
		errs = append(errs, fmt.Errorf("the Workload %q in cluster %q: %w", workload, cluster, err))
	} else if w.DeletionTimestamp != nil {
		errs = append(errs, fmt.Errorf("the Workload %q in cluster %q is being deleted", workload, cluster))
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	if err := c.Get(ctx, client.ObjectKey{Name: operatorNamespace}, ns); err != nil {
		errs = append(errs, fmt.Errorf("the namespace %s in cluster %q: %w", operatorNamespace, cluster, err))
	} else if ns.GetDeletionTimestamp() != nil {
		errs = append(errs, fmt.Errorf("the namespace %s in cluster %q is being deleted", operatorNamespace, cluster))
	}
	return errors.Join(errs...)
}

// HandOverOperator stops Flux delivering the cluster's operator, so that another install
// (Helm, install.yaml) owns it, as on a cluster where Flux never delivered it: the operator
// Kustomization is suspended (not deleted: nothing is pruned) and the cluster's entry point no
// longer depends on it. It records what the cluster's operator ran until then. The teardown
// gives the delivery back to Flux, waits until Flux applied Git's operator again, and runs
// the run's own operator again: on the host it restarts it (with a fresh token: an uninstall
// deleted its ServiceAccount), in the cluster it waits until Flux's Deployment rolled out.
func (sc *Scenario) HandOverOperator(ctx context.Context, cluster string) error {
	r, c, err := sc.releaseAndClient(cluster)
	if err != nil {
		return err
	}
	before, err := sc.operatorRunning(ctx, cluster)
	if err != nil {
		return err
	}
	r.before[cluster] = before
	entry := &unstructured.Unstructured{}
	entry.SetGroupVersionKind(kustomizationGVK)
	if err := c.Get(ctx, fluxKey, entry); err != nil {
		return fmt.Errorf("get the entry-point Kustomization of cluster %q: %w", cluster, err)
	}
	dependsOn, _, _ := unstructured.NestedSlice(entry.Object, "spec", "dependsOn")
	sc.OnTeardown("give cluster "+cluster+"'s operator back to Flux", func(ctx context.Context) error {
		return sc.restoreFluxOperator(ctx, cluster, dependsOn)
	})
	if err := setKustomization(ctx, c, gitrepo.OperatorKustomization, func(ks *unstructured.Unstructured) error {
		return unstructured.SetNestedField(ks.Object, true, "spec", "suspend")
	}); err != nil {
		return fmt.Errorf("suspend the operator Kustomization of cluster %q: %w", cluster, err)
	}
	if err := setKustomization(ctx, c, fluxKey.Name, func(ks *unstructured.Unstructured) error {
		unstructured.RemoveNestedField(ks.Object, "spec", "dependsOn")
		return nil
	}); err != nil {
		return fmt.Errorf("make the entry point of cluster %q independent of the operator Kustomization: %w", cluster, err)
	}
	return nil
}

// setKustomization gets the Kustomization, changes it and updates it, again on a conflict.
func setKustomization(ctx context.Context, c client.Client, name string, change func(*unstructured.Unstructured) error) error {
	for {
		ks := &unstructured.Unstructured{}
		ks.SetGroupVersionKind(kustomizationGVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: name}, ks); err != nil {
			return err
		}
		if err := change(ks); err != nil {
			return err
		}
		err := c.Update(ctx, ks)
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
}

// restoreFluxOperator undoes HandOverOperator.
func (sc *Scenario) restoreFluxOperator(ctx context.Context, cluster string, dependsOn []any) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	var errs []error
	// Asked to reconcile now: with no commit since the suspension, its last applied revision
	// is Git's already, while an uninstall deleted what it applied.
	token := time.Now().UTC().Format(time.RFC3339Nano)
	errs = append(errs, setKustomization(ctx, c, gitrepo.OperatorKustomization, func(ks *unstructured.Unstructured) error {
		unstructured.RemoveNestedField(ks.Object, "spec", "suspend")
		ann := ks.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[fluxmeta.ReconcileRequestAnnotation] = token
		ks.SetAnnotations(ann)
		return nil
	}))
	if len(dependsOn) > 0 {
		errs = append(errs, setKustomization(ctx, c, fluxKey.Name, func(ks *unstructured.Unstructured) error {
			return unstructured.SetNestedSlice(ks.Object, dependsOn, "spec", "dependsOn")
		}))
	}
	errs = append(errs, Await(ctx, sc.Config.Wait(WaitCleanup), "Flux in "+cluster+" to apply the operator from Git again", func(ctx context.Context) error {
		repo := &unstructured.Unstructured{}
		repo.SetGroupVersionKind(gitRepositoryGVK)
		if err := c.Get(ctx, fluxKey, repo); err != nil {
			return err
		}
		rev, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "revision")
		ks := &unstructured.Unstructured{}
		ks.SetGroupVersionKind(kustomizationGVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: gitrepo.OperatorKustomization}, ks); err != nil {
			return err
		}
		if handled, _, _ := unstructured.NestedString(ks.Object, "status", "lastHandledReconcileAt"); handled != token {
			return fmt.Errorf("the operator Kustomization handled the reconcile request %q, not yet %q", handled, token)
		}
		return kustomizationApplied(ctx, c, gitrepo.OperatorKustomization, rev)
	}))
	errs = append(errs, sc.restoreOwnOperator(ctx, cluster, false))
	return errors.Join(errs...)
}
