// Command crdtrim rewrites the generated Polykube CRDs in a directory without the descriptions
// of embedded Kubernetes types (see package crdtrim). `make manifests` runs it after controller-gen:
//
//	go run ./internal/crdtrim/cmd/crdtrim operator/config/crd/bases
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/crdtrim"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim DIR (the directory controller-gen wrote the CRDs to)")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crdtrim:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	scheme := runtime.NewScheme()
	if err := polykubev1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	kinds := crdtrim.KindTypes{}
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.Group == polykubev1alpha1.GroupVersion.Group {
			kinds[gvk.Kind] = t
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD files in %s; run controller-gen first (make manifests)", dir)
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		out, n, err := crdtrim.Trim(in, kinds)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			return err
		}
		fmt.Printf("crdtrim: %s: %d KB → %d KB (%d descriptions of embedded Kubernetes types removed)\n",
			filepath.Base(f), len(in)/1024, len(out)/1024, n)
	}
	return nil
}
