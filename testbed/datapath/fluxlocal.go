package datapath

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// The ports of the Flux controllers, as Flux's own manifests have them.
const (
	fluxStoragePort = 9090
	fluxMetricsPort = 8080
	fluxHealthPort  = 9440
)

// FluxControllerObjects are the in-cluster objects of the source and kustomize controllers
// with the given images: what `flux install --components=source-controller,kustomize-controller`
// creates, less its network policies and with one ClusterRoleBinding to cluster-admin for
// both (Flux binds kustomize-controller to cluster-admin too; source-controller gets more than
// it needs, which a test bed accepts). Written here, not taken from `flux install --registry`:
// that needs the flux CLI, which is not built here, and installs the controller versions the
// CLI embeds, not the ones the hermetic tier pins and the local images hold; Flux's rendered
// manifests are not in the Go modules the test bed builds from. The controllers' flags mirror
// the host bed's (testbed/host/flux.go), with the dependency requeue at 5 s.
func FluxControllerObjects(images FluxImages) []client.Object {
	ns := FluxNamespace
	labels := func(app string) map[string]string {
		return map[string]string{"app": app, "app.kubernetes.io/part-of": "flux", "app.kubernetes.io/managed-by": "polykube-testbed"}
	}
	sa := func(name string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(name)},
		}
	}
	emptyDir := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	deployment := func(name, image string, args []string, ports []corev1.ContainerPort, volumes []corev1.Volume, mounts []corev1.VolumeMount) *appsv1.Deployment {
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(name)},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels(name)},
					Spec: corev1.PodSpec{
						ServiceAccountName:            name,
						TerminationGracePeriodSeconds: ptr.To[int64](10),
						SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1337)},
						Containers: []corev1.Container{{
							Name: "manager", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
							Args: args,
							Env: []corev1.EnvVar{
								{Name: "RUNTIME_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							},
							Ports: ports,
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
								HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("healthz")},
							}},
							LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
								HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("healthz")},
							}},
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: ptr.To(false),
								ReadOnlyRootFilesystem:   ptr.To(true),
								RunAsNonRoot:             ptr.To(true),
								Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
								SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
							},
							VolumeMounts: mounts,
						}},
						Volumes: volumes,
					},
				},
			},
		}
	}
	common := []string{"--watch-all-namespaces=true", "--log-level=info", "--log-encoding=json", "--enable-leader-election=false",
		fmt.Sprintf("--metrics-addr=:%d", fluxMetricsPort), fmt.Sprintf("--health-addr=:%d", fluxHealthPort)}
	port := func(name string, p int32) corev1.ContainerPort {
		return corev1.ContainerPort{Name: name, ContainerPort: p, Protocol: corev1.ProtocolTCP}
	}
	source := deployment("source-controller", images.SourceController,
		append([]string{"--storage-path=/data", fmt.Sprintf("--storage-addr=:%d", fluxStoragePort),
			"--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local."}, common...),
		[]corev1.ContainerPort{port("http", fluxStoragePort), port("http-prom", fluxMetricsPort), port("healthz", fluxHealthPort)},
		[]corev1.Volume{emptyDir("data"), emptyDir("tmp")},
		[]corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"}})
	kustomize := deployment("kustomize-controller", images.KustomizeController,
		append([]string{"--requeue-dependency=5s"}, common...),
		[]corev1.ContainerPort{port("http-prom", fluxMetricsPort), port("healthz", fluxHealthPort)},
		[]corev1.Volume{emptyDir("tmp")},
		[]corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}})
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "source-controller", Namespace: ns, Labels: labels("source-controller")},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "source-controller"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
	crb := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "polykube-testbed-flux-reconciler", Labels: labels("flux")},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{
			{Kind: "ServiceAccount", Name: "source-controller", Namespace: ns},
			{Kind: "ServiceAccount", Name: "kustomize-controller", Namespace: ns},
		},
	}
	return []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels("flux")}},
		sa("source-controller"), sa("kustomize-controller"), crb, svc, source, kustomize,
	}
}

// InstallFluxLocal installs Flux's CRDs (from the controllers' modules, in crdDir) and the
// source and kustomize controllers with images in every member, server-side applied, and waits
// until both controllers are available. applyCRDs applies and waits for a directory of CRDs.
func InstallFluxLocal(ctx context.Context, e *Env, images FluxImages, crdDir string,
	applyCRDs func(ctx context.Context, cl client.Client, dir string) error) error {
	objs := FluxControllerObjects(images)
	var names []string
	for _, o := range objs {
		names = append(names, fmt.Sprintf("%s %s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName()))
	}
	if !e.Runner.Note("in every cluster: apply Flux's CRDs from the source- and kustomize-controller modules, then %s (images %s), and wait until both controllers are available",
		strings.Join(names, ", "), strings.Join(images.List(), ", ")) {
		return nil
	}
	return e.each(func(m Member) error {
		cl, err := e.Client(m)
		if err != nil {
			return err
		}
		if err := applyCRDs(ctx, cl, crdDir); err != nil {
			return fmt.Errorf("Flux CRDs: %w", err)
		}
		for _, o := range FluxControllerObjects(images) {
			if err := cl.Patch(ctx, o, client.Apply, client.FieldOwner("polykube-testbed"), client.ForceOwnership); err != nil {
				return fmt.Errorf("apply %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
		}
		return wait.For(ctx, e.wait(topology.WaitFluxReady), "Flux's controllers in "+m.Name+" to be available", func(ctx context.Context) error {
			for _, d := range []string{"source-controller", "kustomize-controller"} {
				if err := deploymentAvailable(ctx, cl, FluxNamespace, d); err != nil {
					return err
				}
			}
			return nil
		})
	})
}
