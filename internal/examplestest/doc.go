// Package examplestest keeps the examples, the OpenTofu module and the CRDs from drifting
// apart. Its tests (no exported code) load every YAML file under examples/, build every
// kustomization there, render infra/tofu/modules/polykube-manifests with the pinned tofu, and
// send the resulting objects to a real kube-apiserver with the Polykube, Flux and Argo CD CRDs
// installed, as server-side dry runs with strict field validation.
package examplestest
