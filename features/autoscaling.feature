@hermetic
Feature: Autoscaling the operator does not fight
  A Workload with spec.autoscaling runs, in each cluster it targets, an HPA of its own name
  between that cluster's own minimum and maximum: the fleet's bounds split by weight with the
  same allocation as replicas, so every cluster computes the same bounds and none has a minimum
  above its maximum. The operator creates the Deployment at the minimum and then leaves its
  replicas to the HPA: what the HPA decides survives every reconcile and every Flux re-apply.
  The HPAs are Kubernetes' own, run by each cluster's kube-controller-manager. kwok has no
  metrics, so here the HPA acts on its bounds only: a Deployment scaled above its maximum is
  brought back to it.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: An HPA scales one cluster and the operator leaves it alone
    Given a Workload "web" autoscaled between 4 and 12 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 1      |
      | beta    | 1      |
    When I commit the Workload "web" to Git
    Then the HPA of "web" in each cluster scales between:
      | cluster | min | max |
      | alpha   | 2   | 6   |
      | beta    | 2   | 6   |
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
    And cluster "gamma" has the Workload "web" but no Deployment for it
    When someone scales the Deployment of "web" in cluster "alpha" to 20 replicas by hand
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 6        |
      | beta    | 2        |
    When every cluster's Flux applies its last revision again
    Then the replicas of "web" stay as they are while the operators reconcile the re-applied Workload
