package datastorebinding

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// failingReader answers every Get with err, as the API server (or client-go) would, and counts
// the calls.
type failingReader struct {
	client.Reader
	err   error
	calls int
}

func (f *failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	f.calls++
	return f.err
}

// A read of the binding's Secret that fails is the binding's own problem: Resolve reports what
// the user can fix (a name no Secret can have, a Secret the operator may not read) as a
// Resolution, so that the Workload's reconcile goes on; only a passing API error is an error.
func TestResolve_ReadFailures(t *testing.T) {
	secrets := schema.GroupResource{Resource: "secrets"}
	tests := []struct {
		name       string
		secretName string
		err        error
		wantReason string
		wantErr    bool
		wantMsg    []string
		wantNoGet  bool
	}{
		{name: "a slash: client-go refuses the name before any request", secretName: "shop/ledger-db",
			// What client-go returns for it, should Resolve ask.
			err:        fmt.Errorf(`invalid resource name "shop/ledger-db": [may not contain '/']`),
			wantReason: polykubev1alpha1.ReasonInvalidSpec, wantNoGet: true,
			wantMsg: []string{`spec.secretRef.name "shop/ledger-db"`, "not a valid Secret name", "fix the DatastoreBinding"}},
		{name: "a dot alone", secretName: ".", err: fmt.Errorf(`invalid resource name ".": [may not be '.']`),
			wantReason: polykubev1alpha1.ReasonInvalidSpec, wantNoGet: true, wantMsg: []string{`spec.secretRef.name "."`}},
		{name: "forbidden", secretName: "ledger-db",
			err:        apierrors.NewForbidden(secrets, "ledger-db", fmt.Errorf("RBAC: access denied")),
			wantReason: polykubev1alpha1.ReasonSecretUnreadable,
			wantMsg:    []string{"Secret shop/ledger-db", "forbidden", "get"}},
		{name: "not found", secretName: "ledger-db", err: apierrors.NewNotFound(secrets, "ledger-db"),
			wantReason: polykubev1alpha1.ReasonSecretNotFound, wantMsg: []string{"Secret shop/ledger-db not found"}},
		{name: "a passing API error is retried", secretName: "ledger-db",
			err: apierrors.NewServiceUnavailable("etcd is restarting"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := binding("")
			b.Spec.SecretRef.Name = tt.secretName
			r := &failingReader{err: tt.err}
			res, err := Resolve(context.Background(), r, b)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Reason).To(Equal(tt.wantReason))
			g.Expect(res.OK()).To(BeFalse())
			for _, m := range tt.wantMsg {
				g.Expect(res.Message).To(ContainSubstring(m))
			}
			if tt.wantNoGet {
				g.Expect(r.calls).To(BeZero(), "a name no Secret can have is not sent to the API server")
			}
		})
	}
}
