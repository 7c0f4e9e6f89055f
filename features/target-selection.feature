@hermetic
Feature: Targets chosen by cluster labels
  A Workload may choose its clusters by the labels of their ClusterMembers instead of naming
  them, with a weight or replicas per rule. The roster is the same in every cluster, so every
  operator resolves the same targets; a cluster whose labels come to match joins and gets its
  share, and nobody edits a Workload. The suite's roster labels alpha and beta geo=eu, and gamma
  geo=us and site=onprem.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: A cluster that joins the EU by its labels gets its share, and no Workload is edited
    Given a Workload "web" with strategy MultiCloudWeighted and 6 replicas in total, targeting the clusters labelled:
      | labels | weight |
      | geo=eu | 1      |
    When I commit the Workload "web" to Git
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 3        |
    And cluster "gamma" has the Workload "web" but no Deployment for it
    And every cluster computed the same allocation for "web"
    When the roster in Git labels cluster "gamma" with "geo=eu"
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 2        |
    And every cluster computed the same allocation for "web"
    And no cluster's copy of the Workload "web" was edited after it was created
