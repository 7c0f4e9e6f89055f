@hermetic @soak
Feature: Nothing is lost on a bad day
  Stopped API servers, killed operators, Git and Flux down, Workloads scaled and clusters
  relabelled through Git while a fault holds, a binding's Secret deleted and restored: a fleet
  lives through all of it in any order. A seeded random walk of these faults and edits checks
  all along that no Deployment of a targeted Workload is deleted, no unchanged Workload's pods
  roll, no Deployment runs below its allocation, every step converges once repaired, and
  polykube-status says what the fleet is. The same seed replays the same walk. It runs on its
  own (make soak, or --godog.tags=@soak), never in make test.

  Scenario: A short soak loses nothing
    Given a federation of the clusters "alpha", "beta" and "gamma"
    When the fleet soaks for 3 minutes of random faults and edits with seed 1
    Then no invariant of the soak was violated
