package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cucumber/godog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func validationSteps(r *registry) {
	r.step(`^I apply to cluster "([^"]*)":$`, step2(func(s *harness.Scenario, ctx context.Context, cluster string, doc *godog.DocString) error {
		if err := s.Remember(ctx, "before-apply", cluster); err != nil {
			return err
		}
		s.LastApplyErr = s.ApplyTo(ctx, cluster, []byte(doc.Content))
		return nil // the next step says whether the API server should have accepted it
	}))
	r.step(`^the API server rejects it with a message naming "([^"]*)"$`, step1(func(s *harness.Scenario, ctx context.Context, field string) error {
		err := s.LastApplyErr
		switch {
		case err == nil:
			return errors.New("the API server accepted the manifest")
		case !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err):
			return fmt.Errorf("want a validation rejection (422 Invalid or 400 BadRequest), got %w", err)
		case !strings.Contains(err.Error(), field):
			return fmt.Errorf("the rejection does not name %q: %w", field, err)
		}
		return nil
	}))
	r.step(`^nothing changed in cluster "([^"]*)"$`, step1(func(s *harness.Scenario, ctx context.Context, cluster string) error {
		return s.CheckUnchanged(ctx, "before-apply", cluster)
	}))
}
