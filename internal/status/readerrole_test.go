package status_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
	"github.com/polykube/polykube/internal/testenv"
)

// recorder answers every read with nothing and records it as "group resource verb".
type recorder struct {
	scheme *runtime.Scheme
	seen   map[string]bool
}

func (r recorder) note(obj runtime.Object, verb string) error {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return err
	}
	resource := strings.ToLower(strings.TrimSuffix(gvk.Kind, "List")) + "s"
	r.seen[gvk.Group+" "+resource+" "+verb] = true
	return nil
}

func (r recorder) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return r.note(obj, "get")
}

func (r recorder) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	return r.note(list, "list")
}

// TestStatusReaderRole_GrantsExactlyWhatPolykubeStatusReads runs a collection through a reader
// that records each request and compares the requests with the shipped ClusterRole
// polykube-status-reader: every read polykube-status makes is granted, and nothing else is.
func TestStatusReaderRole_GrantsExactlyWhatPolykubeStatusReads(t *testing.T) {
	g := NewWithT(t)
	s, err := fleettest.Scheme()
	g.Expect(err).NotTo(HaveOccurred())
	rec := recorder{scheme: s, seen: map[string]bool{}}
	factory := func(status.Target, time.Duration) (status.Reader, error) { return rec, nil }
	snaps := status.Collect(context.Background(), []status.Target{{Context: "ctx", Config: &rest.Config{Host: "https://127.0.0.1:1"}}},
		status.Query{Namespace: "team-a"}, factory)
	g.Expect(snaps).To(HaveLen(1))
	g.Expect(snaps[0].Err).NotTo(HaveOccurred())
	used := slices.Sorted(maps.Keys(rec.seen))

	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), fleettest.ReaderRoleFile))
	g.Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	g.Expect(yaml.UnmarshalStrict(raw, &role)).To(Succeed())
	var granted []string
	for _, r := range role.Rules {
		g.Expect(r.ResourceNames).To(BeEmpty())
		g.Expect(r.NonResourceURLs).To(BeEmpty())
		for _, grp := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted = append(granted, grp+" "+res+" "+v)
				}
			}
		}
	}
	slices.Sort(granted)
	g.Expect(granted).To(Equal(used), "%s grants other than what polykube-status reads", fleettest.ReaderRoleFile)
}
