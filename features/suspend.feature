@hermetic @suspend
Feature: Suspending a Workload for an emergency hot-patch
  During an incident a platform engineer needs to change what runs by hand (scale up, roll an
  image back) without the operator setting it back a second later. They commit spec.suspend:
  true to Git, as they would suspend a Flux Kustomization: each cluster's operator then writes
  nothing for that Workload but its Ready condition, Unknown with reason Suspended, and a hand
  fix stays, as do later commits, until suspend is committed false again. Then the operator sets
  every cluster back to what Git says.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: A hand fix made while a Workload is suspended through Git stays until Git resumes it
    Given a Workload "checkout" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
    And I commit the Workload "checkout" to Git
    And the replicas of "checkout" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
    When I commit to Git the Workload "checkout" suspended
    Then every operator reports the Workload "checkout" suspended
    When someone scales the Deployment of "checkout" in cluster "alpha" to 5 replicas by hand
    And I commit to Git the Workload "checkout" with cluster "beta" at 3 replicas
    Then every operator reports the Workload "checkout" suspended
    And the replicas of "checkout" are:
      | cluster | replicas |
      | alpha   | 5        |
      | beta    | 1        |
    And the replicas of "checkout" stay as they are while the Workload is suspended
    When I commit to Git the Workload "checkout" resumed
    Then the replicas of "checkout" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 3        |
    And the Workload "checkout" in cluster "alpha" reports Ready True with reason Succeeded
    And no Deployment of "checkout" was deleted or duplicated
