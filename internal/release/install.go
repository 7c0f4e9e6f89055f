package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const (
	// InstallFile is the plain-manifest install, in Dist.
	InstallFile = "install.yaml"
	// baseImage is the image name gitops/operator's Deployment uses; the release replaces it.
	baseImage = "ghcr.io/polykube/operator"
	// ClusterNamePlaceholder is the one value a user sets: the same variable Flux substitutes.
	ClusterNamePlaceholder = "${CLUSTER_NAME}"
)

// RenderOperator is `kustomize build gitops/operator` with the image pinned to ref (a digest
// reference): the release's manifests come from the same base Flux applies from Git, never from
// a second copy. The overlay is written to a temporary directory so the repository is not
// touched.
func RenderOperator(repoRoot, ref, tmp string) ([]byte, error) {
	name, digest, ok := strings.Cut(ref, "@")
	if !ok {
		return nil, fmt.Errorf("image %q is not a digest reference (repository@sha256:…)", ref)
	}
	base, err := filepath.Abs(filepath.Join(repoRoot, "gitops", "operator"))
	if err != nil {
		return nil, err
	}
	overlay, err := os.MkdirTemp(tmp, "overlay-")
	if err != nil {
		return nil, err
	}
	// kustomize refuses an absolute path to a base; a relative one from the overlay is fine.
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		return nil, err
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: %s
    newName: %s
    digest: %s
`, filepath.ToSlash(rel), baseImage, name, digest)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		return nil, fmt.Errorf("kustomize build gitops/operator: %w", err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(out, []byte(ref)) {
		return nil, fmt.Errorf("kustomize build gitops/operator: no container uses the image %s after setting it: does the Deployment still name %s?", ref, baseImage)
	}
	if n := bytes.Count(out, []byte(ClusterNamePlaceholder)); n != 1 {
		return nil, fmt.Errorf("kustomize build gitops/operator: %s appears %d times; install.yaml tells users to set it in one place", ClusterNamePlaceholder, n)
	}
	return out, nil
}

// installYAML writes install.yaml: CRDs, namespace, RBAC and the Deployment, with a header that
// says the one value to set and how.
func (b *build) installYAML(_ context.Context) (string, error) {
	body, err := RenderOperator(b.RepoRoot, b.res.ImageRef, b.tmp)
	if err != nil {
		return "", err
	}
	header := fmt.Sprintf(`# Polykube %[1]s: the operator for one member cluster (CRDs, namespace, RBAC, Deployment).
# Image: %[2]s (%[4]s).
#
# SET ONE VALUE BEFORE APPLYING: the cluster's name, which must be the name of this cluster's
# ClusterMember. It appears once, in Deployment polykube-operator, as the argument
# --cluster-name=%[3]s. For example:
#
#   sed 's/%[3]s/aws-eu-central-1/' install.yaml | kubectl apply --server-side -f -
#
# Left unset, the operator refuses to start and says so in its log. With Flux, apply this file
# from a Kustomization with spec.postBuild.substitute.CLUSTER_NAME instead.
#
# DO NOT UNINSTALL WITH kubectl delete -f: it deletes the CRDs, and with them every Workload,
# ClusterMember and binding in this cluster, and the namespace that holds its identity pin. To
# stop the operator, delete its Deployment: kubectl -n polykube-system delete deployment polykube-operator
`, b.Version, b.res.ImageRef, ClusterNamePlaceholder, join(b.ImagePlatforms, ", "))
	path := filepath.Join(b.Dist, InstallFile)
	if err := os.WriteFile(path, append([]byte(header), body...), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d objects, image by digest", bytes.Count(body, []byte("\n---\n"))+1), nil
}

func join(ps []Platform, sep string) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, sep)
}
