@hermetic
Feature: Credentials stay local and least-privileged
  No process holds credentials for more than one cluster. Each operator runs with its own
  cluster's ServiceAccount, which no other cluster accepts and which cannot read Secrets in bulk.
  polykube-status reads with an identity that cannot change anything.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario Outline: The operator of <cluster> reaches only its own cluster
    Then the operator identity of cluster "<cluster>" can read Workloads in cluster "<cluster>"
    And the operator identity of cluster "<cluster>" is rejected by every other cluster
    And the operator identity of cluster "<cluster>" cannot list Secrets in cluster "<cluster>"

    Examples:
      | cluster |
      | alpha   |
      | beta    |
      | gamma   |

  Scenario: The status reader can read but cannot write
    Then the status reader identity can read Workloads, Federations and Deployments in every cluster
    And the status reader identity cannot create, update or delete Workloads, Deployments or Secrets in any cluster
    And the status reader identity cannot read Secrets in any cluster
