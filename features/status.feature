@hermetic
Feature: Fleet status with polykube-status
  polykube-status reads every cluster through its own kubeconfig context, with read-only
  credentials and a timeout per cluster, and shows one line per Workload with each cluster's
  desired and ready replicas. Scripts read its JSON output and its exit code.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"
    And a Workload "orders" with strategy MultiCloudWeighted and 6 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 2      |
      | beta    | 1      |
    And I commit the Workload "orders" to Git
    And the replicas of "orders" are:
      | cluster | replicas |
      | alpha   | 4        |
      | beta    | 2        |

  Scenario: The table shows each cluster's desired and ready replicas
    When I run polykube-status against every cluster
    Then it shows for "orders" the desired and ready replicas of each cluster:
      | cluster | desired | ready |
      | alpha   | 4       | 4     |
      | beta    | 2       | 2     |
      | gamma   | 0       | 0     |
    And it exits with code 0 (healthy)

  Scenario: JSON output is a FleetStatus document scripts can read
    When I run polykube-status against every cluster with output json
    Then the output is a JSON document of kind "FleetStatus"
    And the JSON reports for "orders" in cluster "alpha" desired 4 and ready 4
    And the JSON reports for "orders" in cluster "beta" desired 2 and ready 2
    And the JSON summary says every cluster was reachable and the fleet is healthy

  @slow
  Scenario: An unreachable cluster is marked, not fatal, and the exit code says so
    Given the API server of cluster "gamma" is stopped
    When I run polykube-status against every cluster
    Then it marks cluster "gamma" unreachable and no other cluster
    And it shows for "orders" the desired and ready replicas of each cluster:
      | cluster | desired | ready |
      | alpha   | 4       | 4     |
      | beta    | 2       | 2     |
    And it exits with code 3 (unreachable)
