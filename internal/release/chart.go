package release

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// ChartName is the Helm chart's name; the archive is ChartName-<chart version>.tgz, the name
// `helm package` gives it, which `helm push` to an OCI registry requires.
const ChartName = "polykube"

// ChartFile is the chart archive's name for a release version (vX.Y.Z → polykube-X.Y.Z.tgz).
func ChartFile(version string) string {
	return ChartName + "-" + strings.TrimPrefix(version, "v") + ".tgz"
}

// Placeholders set into the rendered Deployment and replaced by template expressions after it
// is written as YAML: the chart's templates are the kustomize output with only these fields
// opened up, so it cannot drift from gitops/operator.
const (
	phReplicas     = "PKREPLICAS"
	phImage        = "PKIMAGE"
	phClusterName  = "PKCLUSTERNAMEARG"
	phLeaderElect  = "PKLEADERELECT"
	phResources    = "PKRESOURCES"
	phNodeSelector = "PKNODESELECTOR"
	phTolerations  = "PKTOLERATIONS"
)

// chartHelpers holds the checks a chart install runs at render time: the same rules and the
// same advice as the operator's --cluster-name check (operator/internal/setup).
const chartHelpers = `{{/* The name of this cluster's ClusterMember: required, a DNS label of at most 32 characters. */}}
{{- define "polykube.clusterName" -}}
{{- $name := required "clusterName is required: set it to the name of this cluster's ClusterMember (helm install ... --set clusterName=NAME); with Flux, CLUSTER_NAME in the HelmRelease's valuesFrom or postBuild.substitute" .Values.clusterName -}}
{{- if or (gt (len $name) 32) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name)) -}}
{{- fail (printf "clusterName %q is not a DNS label of at most 32 characters (lowercase letters, digits and '-'), as a ClusterMember name must be (ClusterMesh's limit)" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* The operator image: by digest when one is set (the release's), else by tag. */}}
{{- define "polykube.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}
`

// helmChart renders the chart from the same kustomize build as install.yaml: every object into
// templates/ as it is (the CRDs and the namespace kept by helm uninstall, so Workloads and the
// identity pin survive it), the Deployment with its image, cluster name, replicas,
// leader election, resources, nodeSelector and tolerations templated. It lints the chart with
// the Helm SDK before packaging it.
func (b *build) helmChart(_ context.Context) (string, error) {
	rendered, err := RenderOperator(b.RepoRoot, b.res.ImageRef, b.tmp)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(b.tmp, "chart", ChartName)
	if err := writeChart(dir, rendered, b.Version, b.Repository, b.res.IndexDigest); err != nil {
		return "", err
	}
	if err := LintChart(dir, map[string]any{"clusterName": "lint-check"}); err != nil {
		return "", err
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", fmt.Errorf("load the chart: %w", err)
	}
	// Packed here rather than by chartutil.Save, which stamps the packaging time into the
	// archive: with the release's timestamp, the chart is reproducible like the rest.
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(filepath.Dir(dir), path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		return "", err
	}
	archive, err := b.tarGz(files)
	if err != nil {
		return "", err
	}
	if _, err := loader.LoadArchive(bytes.NewReader(archive)); err != nil {
		return "", fmt.Errorf("the packed chart does not load: %w", err)
	}
	saved := filepath.Join(b.Dist, ChartFile(b.Version))
	if err := os.WriteFile(saved, archive, 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, %d templates, lint clean", filepath.Base(saved), len(ch.Templates)), nil
}

// LintChart runs the Helm SDK's lint (what `helm lint` runs) on an unpacked chart and fails on
// any warning or error.
func LintChart(dir string, values map[string]any) error {
	l := lint.All(dir, values, "polykube-system", false)
	var msgs []string
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			msgs = append(msgs, m.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("helm lint %s:\n  %s", dir, strings.Join(msgs, "\n  "))
	}
	return nil
}

func writeChart(dir string, rendered []byte, version, repository, digest string) error {
	nodes, err := kio.FromBytes(rendered)
	if err != nil {
		return fmt.Errorf("read the kustomize output: %w", err)
	}
	files := map[string][]byte{
		"templates/_helpers.tpl": []byte(chartHelpers),
		".helmignore":            []byte("# Nothing to ignore: the chart is generated by make release.\n"),
	}
	var defaults map[string]any
	for _, n := range nodes {
		kind, name := n.GetKind(), n.GetName()
		out, err := n.String()
		if err != nil {
			return err
		}
		switch {
		case kind == "CustomResourceDefinition" || kind == "Namespace":
			// helm uninstall keeps them: the CRDs hold every Workload, the namespace this
			// cluster's identity pin. The CRDs are templates, not crds/: Helm installs crds/
			// before it renders, so an install refused at render (no clusterName) would leave
			// them behind, and it never upgrades them.
			if err := n.PipeE(kyaml.SetAnnotation("helm.sh/resource-policy", "keep")); err != nil {
				return err
			}
			if out, err = n.String(); err != nil {
				return err
			}
		case kind == "Deployment" && name == "polykube-operator":
			var tmpl string
			tmpl, defaults, err = deploymentTemplate(n)
			if err != nil {
				return err
			}
			out = tmpl
		}
		if kind != "Deployment" && strings.Contains(out, "{{") {
			return fmt.Errorf("%s %s holds '{{', which Helm would read as a template", kind, name)
		}
		files["templates/"+strings.ToLower(kind)+"-"+name+".yaml"] = []byte(out)
	}
	if defaults == nil {
		return fmt.Errorf("the kustomize output has no Deployment polykube-operator")
	}
	resources, err := yaml.Marshal(defaults["resources"])
	if err != nil {
		return err
	}
	files["Chart.yaml"] = []byte(fmt.Sprintf(`apiVersion: v2
name: %s
description: The Polykube operator for one member cluster, rendered from gitops/operator by make release.
type: application
version: %s
appVersion: %s
home: https://github.com/polykube/polykube
sources:
  - https://github.com/polykube/polykube
keywords: [multicluster, cilium, clustermesh, gitops]
`, ChartName, strings.TrimPrefix(version, "v"), version))
	files["values.yaml"] = []byte(fmt.Sprintf(`# The name of this cluster's ClusterMember (required): the one value that differs between the
# clusters of a fleet. A DNS label of at most 32 characters.
clusterName: ""

image:
  repository: %s
  # The release's image index; clear it to use tag instead.
  digest: %s
  # Used only without a digest; defaults to the chart's appVersion.
  tag: ""

# Operator replicas in this cluster; with leaderElection, one of them reconciles.
replicas: %v
leaderElection: true

resources:
%s
nodeSelector: {}

tolerations: []
`, repository, digest, defaults["replicas"], indent(string(resources), "  ")))
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// deploymentTemplate opens the Deployment's values up to the chart, and returns the defaults
// it found (replicas, resources) for values.yaml.
func deploymentTemplate(n *kyaml.RNode) (string, map[string]any, error) {
	var d map[string]any
	s, err := n.String()
	if err != nil {
		return "", nil, err
	}
	if err := yaml.Unmarshal([]byte(s), &d); err != nil {
		return "", nil, err
	}
	spec := d["spec"].(map[string]any)
	defaults := map[string]any{"replicas": spec["replicas"]}
	spec["replicas"] = phReplicas
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	pod["nodeSelector"] = phNodeSelector
	pod["tolerations"] = phTolerations
	var found bool
	for _, c := range pod["containers"].([]any) {
		c := c.(map[string]any)
		if c["name"] != "operator" {
			continue
		}
		found = true
		c["image"] = phImage
		defaults["resources"] = c["resources"]
		c["resources"] = phResources
		args := c["args"].([]any)
		for i, a := range args {
			switch a {
			case "--cluster-name=" + ClusterNamePlaceholder:
				args[i] = phClusterName
			case "--leader-elect":
				args[i] = phLeaderElect
			}
		}
	}
	if !found {
		return "", nil, fmt.Errorf("Deployment polykube-operator has no container named operator")
	}
	raw, err := yaml.Marshal(d)
	if err != nil {
		return "", nil, err
	}
	var out bytes.Buffer
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		ind := line[:len(line)-len(strings.TrimLeft(line, " "))]
		nind := fmt.Sprint(len(ind) + 2)
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "replicas: "+phReplicas:
			line = ind + "replicas: {{ .Values.replicas }}"
		case trimmed == "image: "+phImage:
			line = ind + `image: {{ include "polykube.image" . | quote }}`
		case trimmed == "- "+phClusterName:
			line = ind + `- --cluster-name={{ include "polykube.clusterName" . }}`
		case trimmed == "- "+phLeaderElect:
			line = ind + "- --leader-elect={{ .Values.leaderElection }}"
		case trimmed == "resources: "+phResources:
			line = ind + "resources:\n{{- toYaml .Values.resources | nindent " + nind + " }}"
		case trimmed == "nodeSelector: "+phNodeSelector:
			line = "{{- with .Values.nodeSelector }}\n" + ind + "nodeSelector:\n{{- toYaml . | nindent " + nind + " }}\n{{- end }}"
		case trimmed == "tolerations: "+phTolerations:
			line = "{{- with .Values.tolerations }}\n" + ind + "tolerations:\n{{- toYaml . | nindent " + nind + " }}\n{{- end }}"
		default:
			out.WriteString(line + "\n")
			continue
		}
		seen[strings.Fields(trimmed)[len(strings.Fields(trimmed))-1]] = true
		out.WriteString(line + "\n")
	}
	for _, ph := range []string{phReplicas, phImage, phClusterName, phLeaderElect, phResources, phNodeSelector, phTolerations} {
		if !seen[ph] {
			return "", nil, fmt.Errorf("Deployment polykube-operator: %s was not templated: its YAML changed shape", ph)
		}
	}
	return out.String(), defaults, nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
