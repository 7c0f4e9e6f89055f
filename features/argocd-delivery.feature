@hermetic @argocd
Feature: Delivery with Argo CD
  Argo CD can deliver the fleet instead of Flux. Each cluster runs an Argo CD of its own that
  holds only that cluster's credentials and delivers to it alone (its in-cluster destination):
  two Applications take the place of Flux's two Kustomizations, one for the operator (which
  learns its cluster's name from a Kustomize patch of the Application's source, Argo CD having
  no post-build substitution) and one for the cluster's entry point (the roster and the
  workloads). Argo CD judges the health of Polykube's objects by the health checks Polykube
  ships (gitops/argocd/health-checks.yaml), which read the operator's Ready condition.

  These scenarios run only on a federation that delivers with Argo CD
  (scenarios/topology-argocd.yaml, which `make test` runs beside the Flux one).

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: Argo CD delivers a weighted Workload to every cluster and reports it Healthy
    Given a Workload "web" with strategy MultiCloudWeighted and 6 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 3      |
      | beta    | 2      |
      | gamma   | 1      |
    When I commit the Workload "web" to Git
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 2        |
      | gamma   | 1        |
    And every cluster computed the same allocation for "web"
    And Argo CD in every cluster reports the Workload "web" Healthy
