package workload

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func TestSecretsReadableCondition(t *testing.T) {
	tests := []struct {
		name       string
		n          int
		unreadable []string
		wantShown  bool
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    []string
	}{
		{name: "no bindings: not shown", n: 0},
		{name: "every Secret read", n: 2, wantShown: true, wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded},
		{name: "one of two unreadable", n: 2, unreadable: []string{"DatastoreBinding ledger-db: Secret shop/ledger is forbidden"},
			wantShown: true, wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonSecretUnreadable,
			wantMsg: []string{"1 of 2 DatastoreBindings", "DatastoreBinding ledger-db: Secret shop/ledger is forbidden", "the rest of the Workload is reconciled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, reason, msg, shown := secretsReadableCondition(tt.n, tt.unreadable)
			g.Expect(shown).To(Equal(tt.wantShown))
			g.Expect(status).To(Equal(tt.wantStatus))
			g.Expect(reason).To(Equal(tt.wantReason))
			for _, m := range tt.wantMsg {
				g.Expect(msg).To(ContainSubstring(m))
			}
		})
	}
}
