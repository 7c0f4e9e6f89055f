package workload

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func TestEnvCondition(t *testing.T) {
	older := testBinding("z-old", "db-creds", "DB_")
	older.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newer := testBinding("a-new", "other-creds", "DB_")
	newer.CreationTimestamp = metav1.NewTime(older.CreationTimestamp.Add(time.Minute))
	cache := testBinding("cache", "cache-creds", "CACHE_", "sidecar")
	tests := []struct {
		name       string
		bindings   []binding
		wantOK     bool
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  []string
	}{
		{name: "no bindings: no condition"},
		{
			name: "no collision, no template var replaced", bindings: []binding{{cache, true}},
			wantOK: true, wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "template var replaced", bindings: []binding{{older, true}},
			wantOK: true, wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonTemplateEnvReplaced,
			wantInMsg: []string{"DB_HOST in container app (DatastoreBinding z-old)"},
		},
		{
			name: "collision, whatever the order of the list", bindings: []binding{{newer, true}, {older, true}},
			wantOK: true, wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonEnvConflict,
			wantInMsg: []string{"DB_HOST in container app is mapped by DatastoreBindings z-old and a-new; z-old, established first, keeps it"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			status, reason, msg, ok := envCondition(testWorkload().Spec.Template.Spec.Containers, tc.bindings)
			g.Expect(ok).To(Equal(tc.wantOK))
			g.Expect(status).To(Equal(tc.wantStatus))
			g.Expect(reason).To(Equal(tc.wantReason))
			for _, w := range tc.wantInMsg {
				g.Expect(msg).To(ContainSubstring(w))
			}
		})
	}
}
