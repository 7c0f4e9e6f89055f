package scenarios

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/scenarios/internal/harness"
)

func credentialSteps(r *registry) {
	r.step(`^the operator identity of cluster "([^"]*)" can read Workloads in cluster "([^"]*)"$`, step2(func(s *harness.Scenario, ctx context.Context, owner, cluster string) error {
		cfg, err := s.Fed.OperatorConfig(owner)
		if err != nil {
			return err
		}
		return harness.CheckCanRead(ctx, cfg, cluster, &polykubev1alpha1.WorkloadList{})
	}))
	r.step(`^the operator identity of cluster "([^"]*)" is rejected by every other cluster$`, step1(func(s *harness.Scenario, ctx context.Context, owner string) error {
		cfg, err := s.Fed.OperatorConfig(owner)
		if err != nil {
			return err
		}
		var errs []error
		for _, other := range s.OtherClusters(owner) {
			errs = append(errs, s.CheckRejectedBy(ctx, cfg, other))
		}
		return errors.Join(errs...)
	}))
	r.step(`^the operator identity of cluster "([^"]*)" cannot list Secrets in cluster "([^"]*)"$`, step2(func(s *harness.Scenario, ctx context.Context, owner, cluster string) error {
		cfg, err := s.Fed.OperatorConfig(owner)
		if err != nil {
			return err
		}
		reqs := []harness.Request{
			harness.ReadRequests("Secret", "", &corev1.Secret{}, &corev1.SecretList{})[0],
			harness.ReadRequests("Secret", s.Namespace, &corev1.Secret{}, &corev1.SecretList{})[0],
		}
		reqs[0].Name = "list Secrets in all namespaces"
		reqs[1].Name = "list Secrets in " + s.Namespace
		return harness.CheckForbidden(ctx, cfg, cluster, reqs...)
	}))
	r.step(`^the status reader identity can read Workloads, Federations and Deployments in every cluster$`, step0(func(s *harness.Scenario, ctx context.Context) error {
		var errs []error
		for _, cl := range s.Fed.Clusters() {
			cfg, err := s.ReaderConfig(ctx, cl)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, harness.CheckCanRead(ctx, cfg, cl,
				&polykubev1alpha1.WorkloadList{}, &polykubev1alpha1.FederationList{}, &appsv1.DeploymentList{}))
		}
		return errors.Join(errs...)
	}))
	r.step(`^the status reader identity cannot create, update or delete Workloads, Deployments or Secrets in any cluster$`, step0(func(s *harness.Scenario, ctx context.Context) error {
		var reqs []harness.Request
		for _, kind := range []string{"Workload", "Deployment", "Secret"} {
			reqs = append(reqs, harness.WriteRequests(kind, harness.WriteKinds[kind], s.Namespace)...)
		}
		return s.ForEachReader(ctx, func(ctx context.Context, cluster string, s *harness.Scenario) error {
			cfg, err := s.ReaderConfig(ctx, cluster)
			if err != nil {
				return err
			}
			return harness.CheckForbidden(ctx, cfg, cluster, reqs...)
		})
	}))
	r.step(`^the status reader identity cannot read Secrets in any cluster$`, step0(func(s *harness.Scenario, ctx context.Context) error {
		reqs := harness.ReadRequests("Secret", s.Namespace, &corev1.Secret{}, &corev1.SecretList{})
		return s.ForEachReader(ctx, func(ctx context.Context, cluster string, s *harness.Scenario) error {
			cfg, err := s.ReaderConfig(ctx, cluster)
			if err != nil {
				return err
			}
			return harness.CheckForbidden(ctx, cfg, cluster, reqs...)
		})
	}))
}
