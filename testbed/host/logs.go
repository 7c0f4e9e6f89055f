package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/topology"
)

// CollectLogs writes a diagnostics bundle into dest: every process log and component log,
// state.json and, per reachable cluster, its events and its Flux, Polykube and workload
// objects as YAML. It collects what it can and reports what it could not.
func (tb *Testbed) CollectLogs(ctx context.Context, dest string) error {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	var errs []error
	// Process logs (Git server, Flux controllers, operators) and the run's records.
	if err := copyGlob(filepath.Join(tb.dir, "procs", "*.log"), filepath.Join(dest, "processes")); err != nil {
		errs = append(errs, err)
	}
	_ = copyFile(filepath.Join(tb.dir, "state.json"), filepath.Join(dest, "state.json"))
	if data, err := tb.state.Topology.Marshal(); err == nil {
		_ = os.WriteFile(filepath.Join(dest, "topology.yaml"), data, 0o644)
	}
	err := tb.forEachCluster(func(c topology.Cluster) error {
		dir := filepath.Join(dest, "clusters", c.Name)
		// Control-plane component logs kept by kwokctl.
		_ = copyGlob(filepath.Join(tb.dir, "clusters", c.Name, "clusters", c.Name, "logs", "*"), filepath.Join(dir, "components"))
		cl, err := tb.Client(c.Name)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var errs []error
		apps := &unstructured.UnstructuredList{}
		apps.SetGroupVersionKind(testbed.ApplicationGVK.GroupVersion().WithKind("ApplicationList"))
		for file, list := range map[string]client.ObjectList{
			"applications.yaml":      apps,
			"events.yaml":            &corev1.EventList{},
			"nodes.yaml":             &corev1.NodeList{},
			"pods.yaml":              &corev1.PodList{},
			"services.yaml":          &corev1.ServiceList{},
			"deployments.yaml":       &appsv1.DeploymentList{},
			"gitrepositories.yaml":   &sourcev1.GitRepositoryList{},
			"kustomizations.yaml":    &kustomizev1.KustomizationList{},
			"clustermembers.yaml":    &polykubev1alpha1.ClusterMemberList{},
			"federations.yaml":       &polykubev1alpha1.FederationList{},
			"workloads.yaml":         &polykubev1alpha1.WorkloadList{},
			"serviceendpoints.yaml":  &polykubev1alpha1.ServiceEndpointList{},
			"datastorebindings.yaml": &polykubev1alpha1.DatastoreBindingList{},
		} {
			if err := cl.List(cctx, list); err != nil {
				if apimeta.IsNoMatchError(err) {
					continue // that add-on is not installed
				}
				errs = append(errs, fmt.Errorf("list for %s: %w", file, err))
				continue
			}
			data, err := yaml.Marshal(list)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
	if err != nil {
		errs = append(errs, err)
		_ = os.WriteFile(filepath.Join(dest, "errors.txt"), []byte(err.Error()+"\n"), 0o644)
	}
	return errors.Join(errs...)
}

func copyGlob(pattern, destDir string) error {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return err
	}
	for _, f := range files {
		if info, err := os.Stat(f); err != nil || info.IsDir() {
			continue
		}
		if err := os.MkdirAll(destDir, 0o755); err != nil {
			return err
		}
		if err := copyFile(f, filepath.Join(destDir, filepath.Base(f))); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(0o644))
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
