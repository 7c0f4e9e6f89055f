package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// FieldOwner is the test bed's server-side apply field manager.
const FieldOwner = client.FieldOwner("polykube-testbed")

// ApplyCRDDir server-side applies every CRD in dir and waits until they are Established.
func ApplyCRDDir(ctx context.Context, cl client.Client, dir string, w topology.Wait) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	var names []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue // the list of the CRDs, as Argo CD's manifests/crds carries it
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("decode %s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			u.SetManagedFields(nil)
			// A loaded API server can answer a large CRD (Argo CD's ApplicationSet CRD is 1.5 MB)
			// after the client's timeout; the apply is idempotent, so it is tried again within
			// the wait. What the server refuses fails at once.
			var applyErr error
			err := wait.For(ctx, w, "apply CRD "+u.GetName(), func(ctx context.Context) error {
				applyErr = cl.Patch(ctx, u, client.Apply, FieldOwner, client.ForceOwnership)
				if applyErr != nil && !slowServer(applyErr) {
					return wait.Stop(applyErr)
				}
				return applyErr
			})
			if err != nil {
				if applyErr == nil {
					applyErr = err
				}
				return fmt.Errorf("apply CRD %s from %s: %w", u.GetName(), f, applyErr)
			}
			names = append(names, u.GetName())
		}
	}
	return wait.For(ctx, w, fmt.Sprintf("%d CRDs to be established", len(names)), func(ctx context.Context) error {
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := cl.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				return err
			}
			established := false
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			if !established {
				return fmt.Errorf("CRD %s is not established", n)
			}
		}
		return nil
	})
}

// slowServer reports an error of an API server too slow to answer in time (the client's
// timeout, a server-side timeout or throttling), after which the same request may succeed.
func slowServer(err error) bool {
	var netErr net.Error
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}
