@hermetic
Feature: GitOps delivery of Workloads
  As a platform engineer I commit a Workload to Git once. Flux delivers the same manifest to
  every member cluster, and the operator of each cluster runs only that cluster's slice: no
  central control plane, no process that writes to more than one cluster.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: A Workload committed to Git runs its slice in every targeted cluster
    Given a Workload "checkout" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
    When I commit the Workload "checkout" to Git
    Then every cluster has applied the latest Git revision
    And the replicas of "checkout" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
    And cluster "gamma" has the Workload "checkout" but no Deployment for it
    And each Deployment of "checkout" was created by the operator of its own cluster

  Scenario: A change committed to Git is delivered to every cluster
    Given a Workload "checkout" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
    And I commit the Workload "checkout" to Git
    And the replicas of "checkout" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
    When I commit to Git the Workload "checkout" with cluster "beta" at 3 replicas
    Then every cluster has applied the latest Git revision
    And the replicas of "checkout" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 3        |
    And no Deployment of "checkout" was deleted or duplicated

  Scenario: Removing a Workload from Git removes it from every cluster
    Given a Workload "checkout" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | gamma   | 1        |
    And I commit the Workload "checkout" to Git
    And the replicas of "checkout" are:
      | cluster | replicas |
      | alpha   | 2        |
      | gamma   | 1        |
    When I remove the Workload "checkout" from Git
    Then every cluster has applied the latest Git revision
    And no cluster has the Workload "checkout" or a Deployment for it
