package datapath

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Every kind the local Flux install writes or reads (its objects, and the CRDs it waits on)
// is in the datapath client's scheme; a missing one failed the first real run.
func TestFluxControllerObjects_KnownToTheScheme(t *testing.T) {
	g := NewWithT(t)
	objs := FluxControllerObjects(LocalFluxImages())
	for _, o := range append(objs, &apiextensionsv1.CustomResourceDefinition{}) {
		_, _, err := Scheme.ObjectKinds(o)
		g.Expect(err).NotTo(HaveOccurred(), "%T", o)
	}
	var deployments []string
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			deployments = append(deployments, d.Name)
			c := d.Spec.Template.Spec.Containers[0]
			g.Expect(c.Image).To(HavePrefix("polykube.local/fluxcd/"))
			g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal(d.Name))
			g.Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", "/tmp")), "read-only root: /tmp is a volume")
		}
	}
	g.Expect(deployments).To(ConsistOf("source-controller", "kustomize-controller"))
}
