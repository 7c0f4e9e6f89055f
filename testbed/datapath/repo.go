package datapath

import (
	"bytes"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// Seed renders the in-cluster bed's Git repository: the host bed's layout
// (gitrepo.Render: operator/, crds/, roster/, workloads/, clusters/<name>/), except that the
// operator's kustomization runs its Deployment in the cluster, with the image built by the
// test bed (a kustomize images override), instead of scaling it to zero for a host process.
func Seed(top *topology.Topology, src gitrepo.Sources, image string) (*gitrepo.Seed, error) {
	seed, err := gitrepo.Render(top, src)
	if err != nil {
		return nil, err
	}
	base, err := OperatorImage(seed.Files[gitrepo.OperatorDir+"/operator.yaml"], seed.Deployment.Name)
	if err != nil {
		return nil, err
	}
	newName, newTag, _ := strings.Cut(image, ":")
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Applied by the Kustomization %s; Flux substitutes ${%s} with the cluster's name.\n", gitrepo.OperatorKustomization, gitrepo.ClusterNameVar)
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - operator.yaml\n")
	fmt.Fprintf(&b, "# The operator runs in the cluster, from the image the test bed built and loaded into the nodes.\n")
	fmt.Fprintf(&b, "images:\n  - name: %s\n    newName: %s\n    newTag: %q\n", base, newName, newTag)
	seed.Files[gitrepo.OperatorDir+"/kustomization.yaml"] = b.Bytes()
	return seed, nil
}

// OperatorImage finds the image name (without tag or digest) of the operator Deployment's
// first container in the rendered operator base.
func OperatorImage(operatorYAML []byte, deployment string) (string, error) {
	for _, doc := range bytes.Split(operatorYAML, []byte("\n---\n")) {
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err != nil || d.Kind != "Deployment" || d.Name != deployment {
			continue
		}
		if len(d.Spec.Template.Spec.Containers) == 0 {
			break
		}
		img := d.Spec.Template.Spec.Containers[0].Image
		if i := strings.Index(img, "@"); i >= 0 {
			img = img[:i]
		}
		if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
			img = img[:i]
		}
		return img, nil
	}
	return "", fmt.Errorf("the operator base has no Deployment %q with a container; the in-cluster bed overrides its image, so keep that Deployment in the base", deployment)
}
