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

// readerExtras are the grants of polykube-status-reader beyond what a report's collection
// reads, each for the command that needs it.
var readerExtras = map[string]string{
	"polykube.kismet.io workloads get": "bundle", "polykube.kismet.io workloads watch": "--watch",
	"polykube.kismet.io federations get": "bundle", "polykube.kismet.io federations watch": "--watch",
	"polykube.kismet.io clustermembers get": "bundle", "polykube.kismet.io clustermembers watch": "--watch",
	"polykube.kismet.io serviceendpoints get": "bundle", "polykube.kismet.io serviceendpoints watch": "--watch",
	"polykube.kismet.io datastorebindings get": "bundle", "polykube.kismet.io datastorebindings watch": "--watch",
	"apps deployments get": "bundle", "apps deployments watch": "--watch",
	" services get": "events, bundle", " services list": "events, bundle",
	"autoscaling horizontalpodautoscalers get": "events, bundle", "autoscaling horizontalpodautoscalers list": "events, bundle",
	"events.k8s.io events list": "events, bundle", " events list": "events, bundle (core/v1 where events.k8s.io is not served)",
	"kustomize.toolkit.fluxcd.io kustomizations get": "bundle", "kustomize.toolkit.fluxcd.io kustomizations list": "bundle",
	"source.toolkit.fluxcd.io gitrepositories get": "bundle", "source.toolkit.fluxcd.io gitrepositories list": "bundle",
	"source.toolkit.fluxcd.io ocirepositories get": "bundle", "source.toolkit.fluxcd.io ocirepositories list": "bundle",
	"argoproj.io applications get": "bundle", "argoproj.io applications list": "bundle",
	" configmaps get cilium-config": "bundle (Cilium's cluster-name, by name only)",
}

// TestStatusReaderRole_GrantsWhatPolykubeStatusReads runs a collection through a reader that
// records each request and compares the requests with the shipped ClusterRole
// polykube-status-reader: every read a report makes is granted, and every other grant is one
// that --watch, events or bundle needs (readerExtras), so the role cannot grow unnoticed.
func TestStatusReaderRole_GrantsWhatPolykubeStatusReads(t *testing.T) {
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
	granted := map[string]bool{}
	for _, r := range role.Rules {
		g.Expect(r.NonResourceURLs).To(BeEmpty())
		for _, grp := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					grant := grp + " " + res + " " + v
					if len(r.ResourceNames) > 0 {
						grant += " " + strings.Join(r.ResourceNames, ",")
					}
					granted[grant] = true
				}
			}
		}
	}
	for _, u := range used {
		g.Expect(granted).To(HaveKey(u), "%s does not grant %q, which polykube-status reads", fleettest.ReaderRoleFile, u)
	}
	for grant := range granted {
		if !slices.Contains(used, grant) {
			g.Expect(readerExtras).To(HaveKey(grant), "%s grants %q, which neither a report nor --watch, events or bundle reads", fleettest.ReaderRoleFile, grant)
		}
	}
}
