@hermetic @slow
Feature: Failure isolation
  A member cluster, an operator or the Git server can fail. The rest of the federation keeps
  working, nothing is deleted because something is unreachable, and the failed part catches up
  with the latest revision in Git when it returns, without disturbing anything else.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"
    And a Workload "web" with strategy MultiCloudWeighted and 6 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 1      |
      | beta    | 1      |
      | gamma   | 1      |
    And I commit the Workload "web" to Git
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 2        |

  Scenario: A cluster whose API server stops does not hold up the others
    When the API server of cluster "alpha" is stopped
    And I commit to Git the Workload "web" with 9 replicas in total
    Then the replicas of "web" are:
      | cluster | replicas |
      | beta    | 3        |
      | gamma   | 3        |
    And polykube-status marks cluster "alpha" unreachable and no other cluster
    When the API server of cluster "alpha" is started again
    Then cluster "alpha" has applied the latest Git revision
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 3        |
      | gamma   | 3        |
    And nothing changed in the other clusters when "alpha" returned
    And no Deployment of "web" was deleted or duplicated

  Scenario: An operator killed in the middle of a change converges when it restarts
    When I commit to Git the Workload "web" with 12 replicas in total
    And the operator of cluster "beta" is killed as soon as the change reaches it
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 4        |
      | gamma   | 4        |
    When the operator of cluster "beta" is restarted
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 4        |
      | beta    | 4        |
      | gamma   | 4        |
    And no Deployment of "web" was deleted or duplicated

  # PolykubeOperatorDown waits 10m in gitops/monitoring; the test bed's Prometheus evaluates it
  # with a `for` of at most 20s (scenarios/topology.yaml, prometheus.alertForAtMost).
  @prometheus
  Scenario: A stopped operator raises an alert in its own cluster and in no other
    When the operator of cluster "gamma" is stopped
    Then the alert PolykubeOperatorDown fires in cluster "gamma" and in no other cluster
    When the operator of cluster "gamma" is restarted
    Then the alert PolykubeOperatorDown is no longer active in any cluster

  Scenario: While the Git server is down every cluster keeps serving its last state
    When the Git server is stopped
    Then every cluster reports that it cannot fetch from Git
    When every cluster's Flux applies its last revision again
    Then the replicas of "web" stay as they are while Git is unreachable
    And no Deployment of "web" was deleted or duplicated
    When the Git server is started again
    And I commit to Git the Workload "web" with 9 replicas in total
    Then every cluster has applied the latest Git revision
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 3        |
      | gamma   | 3        |
    And no Deployment of "web" was deleted or duplicated
