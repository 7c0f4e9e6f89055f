package placement

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// ServicePorts are the Service ports of the declared ports: the target port defaults to the
// port, the protocol to TCP. The Workload's own Service and a ServiceEndpoint's global one both
// take their ports from here, so that a port field added later is added once.
//
// It is part of the upgrade contract (TestContract_RenderedObjects pins what it returns): a
// change rewrites the Service of every Workload during an upgrade.
func ServicePorts(ports []polykubev1alpha1.WorkloadPort) []corev1.ServicePort {
	if len(ports) == 0 {
		return nil
	}
	out := make([]corev1.ServicePort, 0, len(ports))
	for _, p := range ports {
		target := p.TargetPort
		if target == 0 {
			target = p.Port
		}
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, corev1.ServicePort{
			Name:       p.Name,
			Port:       p.Port,
			TargetPort: intstr.FromInt32(target),
			Protocol:   proto,
		})
	}
	return out
}

// Service is the ClusterIP Service the operator of cluster runs for the Workload when it
// declares ports (nil when it declares none), as far as the Workload and the cluster's name
// determine it: name, namespace, the owned labels, the pod selector and the ports. The operator
// adds what only its cluster knows (the owner reference to the Workload's UID, the hash of what
// it wrote), as for Deployment.
func Service(wl *polykubev1alpha1.Workload, cluster string) *corev1.Service {
	if len(wl.Spec.Ports) == 0 {
		return nil
	}
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      wl.Name,
			Namespace: wl.Namespace,
			Labels:    OwnedLabels(wl.Name, cluster),
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: PodSelector(wl.Name),
			Ports:    ServicePorts(wl.Spec.Ports),
		},
	}
}
