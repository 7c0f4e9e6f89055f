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
// test bed (a kustomize images override), instead of scaling it to zero for a host process;
// and that each cluster applies the operator through its own clusters/<name>/operator
// (ClusterOperatorPath), which names operator/.
func Seed(top *topology.Topology, src gitrepo.Sources, image string) (*gitrepo.Seed, error) {
	seed, err := gitrepo.Render(top, src)
	if err != nil {
		return nil, err
	}
	kust, err := operatorKustomization(seed.Files[gitrepo.OperatorDir+"/operator.yaml"], seed.Deployment.Name, image)
	if err != nil {
		return nil, err
	}
	seed.Files[gitrepo.OperatorDir+"/kustomization.yaml"] = kust
	for _, c := range top.Clusters {
		seed.Files[ClusterOperatorPath(c.Name)+"/kustomization.yaml"] = ClusterOperatorKustomization(c.Name, gitrepo.OperatorDir)
	}
	return seed, nil
}

// OperatorRelease renders the operator base of a checkout (another release's, for an upgrade)
// as the files of one directory of the in-cluster bed's repository: the rendered base, with
// its own Polykube CRDs, and a kustomization running it from image.
func OperatorRelease(base, image string) (map[string][]byte, error) {
	op, err := gitrepo.RenderOperator(base)
	if err != nil {
		return nil, err
	}
	if !op.CRDs {
		return nil, fmt.Errorf("the operator base %s carries no Polykube CRDs: a release directory must hold its own", base)
	}
	kust, err := operatorKustomization(op.YAML, op.Deployment.Name, image)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"operator.yaml": op.YAML, "kustomization.yaml": kust}, nil
}

func operatorKustomization(operatorYAML []byte, deployment, image string) ([]byte, error) {
	base, err := OperatorImage(operatorYAML, deployment)
	if err != nil {
		return nil, err
	}
	newName, newTag, _ := strings.Cut(image, ":")
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Applied by the Kustomization %s; Flux substitutes ${%s} with the cluster's name.\n", gitrepo.OperatorKustomization, gitrepo.ClusterNameVar)
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - operator.yaml\n")
	fmt.Fprintf(&b, "# The operator runs in the cluster, from the image the test bed built and loaded into the nodes.\n")
	fmt.Fprintf(&b, "images:\n  - name: %s\n    newName: %s\n    newTag: %q\n", base, newName, newTag)
	return b.Bytes(), nil
}

// ClusterOperatorPath is the directory of a cluster's operator in the in-cluster bed's
// repository, which the cluster's Kustomization polykube-operator applies: a kustomization
// naming the release directory the cluster runs (operator/, this tree's, unless a scenario
// moved it). Moving one cluster to another release is a commit of that one file, as a fleet
// moves one cluster's entry point.
func ClusterOperatorPath(cluster string) string { return gitrepo.ClusterPath(cluster) + "/operator" }

// ClusterOperatorKustomization is the kustomization of ClusterOperatorPath naming the release
// directory dir (relative to the repository's root).
func ClusterOperatorKustomization(cluster, dir string) []byte {
	return fmt.Appendf(nil, "# The operator release cluster %s runs; moving the cluster to another release changes the line below.\n"+
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../../%s\n", cluster, dir)
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
