package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/meshmirror"
)

// ServicePort is a Service port a step expects.
type ServicePort struct {
	Port, TargetPort int32
}

// AwaitService waits until every cluster has the Service in the scenario's namespace with the
// port and annotations, made by that cluster's operator.
func (sc *Scenario) AwaitService(ctx context.Context, name string, port ServicePort, annotations map[string]string) error {
	what := fmt.Sprintf("every cluster to have the Service %s/%s with port %d→%d and annotations %v", sc.Namespace, name, port.Port, port.TargetPort, annotations)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			var svc corev1.Service
			if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: name}, &svc); err != nil {
				return fmt.Errorf("get Service %s: %w", name, err)
			}
			var problems []string
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
				return p.Port == port.Port && p.TargetPort.IntValue() == int(port.TargetPort)
			}) {
				problems = append(problems, fmt.Sprintf("ports %v", svc.Spec.Ports))
			}
			for k, v := range annotations {
				if got, ok := svc.Annotations[k]; !ok || got != v {
					problems = append(problems, fmt.Sprintf("annotation %s=%q (present %t), want %q", k, got, ok, v))
				}
			}
			if svc.Labels[polykubev1alpha1.ManagedByLabel] != polykubev1alpha1.ManagedByValue {
				problems = append(problems, fmt.Sprintf("label %s=%q", polykubev1alpha1.ManagedByLabel, svc.Labels[polykubev1alpha1.ManagedByLabel]))
			}
			if len(problems) > 0 {
				return fmt.Errorf("Service %s: %s", name, strings.Join(problems, ", "))
			}
			return nil
		})
	})
}

// CheckServiceSelectsWorkload checks in every cluster that the Service selects by the
// Workload's label and, where the cluster runs a Deployment of it, matches its pods.
func (sc *Scenario) CheckServiceSelectsWorkload(ctx context.Context, service, workload string) error {
	return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: service}, &svc); err != nil {
			return fmt.Errorf("get Service %s: %w", service, err)
		}
		if got := svc.Spec.Selector[polykubev1alpha1.WorkloadNameLabel]; got != workload {
			return fmt.Errorf("Service %s selector %v does not select %s=%s", service, svc.Spec.Selector, polykubev1alpha1.WorkloadNameLabel, workload)
		}
		ds, err := sc.localDeployments(ctx, c, workload)
		if err != nil {
			return err
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		for _, d := range ds {
			if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				return fmt.Errorf("Service %s selector %v does not match the pods of Deployment %s (labels %v)", service, svc.Spec.Selector, d.Name, d.Spec.Template.Labels)
			}
		}
		return nil
	})
}

// EnvRef is an env var a container should read from a Secret key.
type EnvRef struct {
	Name, Secret, Key string
}

// AwaitEnvFromSecret waits until every container of the cluster's Deployment reads each env
// var by secretKeyRef (and holds no literal value for it).
func (sc *Scenario) AwaitEnvFromSecret(ctx context.Context, cluster, deployment string, want []EnvRef) error {
	what := fmt.Sprintf("every container of Deployment %s in cluster %q to read %v by secretKeyRef", deployment, cluster, want)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, []string{cluster}, func(ctx context.Context, cl string, c client.Client) error {
			d, err := sc.observe(ctx, cl, c, deployment)
			if err != nil {
				return err
			}
			if d == nil {
				return fmt.Errorf("no Deployment %s", deployment)
			}
			var errs []error
			for _, ctr := range d.Spec.Template.Spec.Containers {
				for _, w := range want {
					i := slices.IndexFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == w.Name })
					if i < 0 {
						errs = append(errs, fmt.Errorf("container %s has no env %s", ctr.Name, w.Name))
						continue
					}
					e := ctr.Env[i]
					ref := e.ValueFrom
					if e.Value != "" || ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != w.Secret || ref.SecretKeyRef.Key != w.Key {
						errs = append(errs, fmt.Errorf("container %s env %s is %+v, want secretKeyRef %s/%s", ctr.Name, w.Name, e, w.Secret, w.Key))
					}
				}
			}
			return errors.Join(errs...)
		})
	})
}

// meshState is what the mesh showed the scenario last.
type meshState struct {
	// mirror is the test bed's mesh mirror as a step last found it.
	mirror *meshmirror.Status
	// meshSource says what mirrors the endpoints on a federation with the datapath capability
	// (Cilium, with its TTL).
	meshSource string
}
