package scenarios

import (
	"context"

	"github.com/cucumber/godog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/scenarios/internal/harness"
)

func newBinding() harness.Conditioned { return &polykubev1alpha1.DatastoreBinding{} }

func datastoreSteps(r *registry) {
	r.step(`^cluster "([^"]*)" has the Secret "([^"]*)" with the keys? (.+)$`, step3(func(s *harness.Scenario, ctx context.Context, cluster, name, keys string) error {
		list, err := quotedList(keys)
		if err != nil {
			return err
		}
		return s.CreateSecret(ctx, cluster, name, list)
	}))
	r.step(`^cluster "([^"]*)" has no Secret "([^"]*)"$`, step2((*harness.Scenario).CheckNoSecret))
	r.step(`^in cluster "([^"]*)" the DatastoreBinding "([^"]*)" is Bound$`, step2(func(s *harness.Scenario, ctx context.Context, cluster, name string) error {
		return s.AwaitConditions(ctx, []string{cluster}, newBinding, name,
			harness.Condition{Type: polykubev1alpha1.BoundCondition, Status: metav1.ConditionTrue},
			harness.Condition{Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionTrue})
	}))
	r.step(`^in cluster "([^"]*)" the DatastoreBinding "([^"]*)" is not Bound, with reason (\w+) and a message naming "([^"]*)"$`, step4(func(s *harness.Scenario, ctx context.Context, cluster, name, reason, named string) error {
		return s.AwaitConditions(ctx, []string{cluster}, newBinding, name,
			harness.Condition{Type: polykubev1alpha1.BoundCondition, Status: metav1.ConditionFalse, Reason: reason, MessageNames: []string{named}},
			harness.Condition{Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionFalse})
	}))
	r.step(`^in cluster "([^"]*)" every container of the Deployment "([^"]*)" reads these env vars by secretKeyRef:$`, step3(func(s *harness.Scenario, ctx context.Context, cluster, deployment string, table *godog.Table) error {
		rows, err := tableRows(table, "env", "secret", "key")
		if err != nil {
			return err
		}
		var want []harness.EnvRef
		for _, row := range rows {
			want = append(want, harness.EnvRef{Name: row["env"], Secret: row["secret"], Key: row["key"]})
		}
		return s.AwaitEnvFromSecret(ctx, cluster, deployment, want)
	}))
	r.step(`^no secret value appears outside the Secrets in any cluster$`, step0((*harness.Scenario).CheckNoSecretValues))
}
