@hermetic @slow @mesh-mirror @misnamed-mesh
Feature: A cluster that Cilium calls by another name
  Cilium labels the EndpointSlices it mirrors into the other clusters with its own cluster.name
  (Helm cluster.name, cilium-config's cluster-name). Capacity failover counts a peer's ready
  endpoints by its ClusterMember name, so when a cluster's Cilium was installed under another
  name (a values file copied from another cluster) the others cannot count that cluster's
  endpoints: it looks down to them and its share is absorbed as a real loss would be. Each other
  cluster's failover condition then names the source that is no target, and asks whether
  Cilium's cluster.name is the ClusterMember name.

  On kwok the test bed's mesh mirror takes the other name at run time. Real Cilium takes it at
  install only: on kind the federation of topology-kind-misnamed.yaml installs Cilium in gamma
  as "gamma-prod", the step checks it, and only the scenarios of this feature run there.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"
    And every cluster's endpoints of global Services are mirrored into the others
    And Cilium in cluster "gamma" goes by the cluster name "gamma-prod"
    And a Workload "web" with strategy MultiCloudWeighted and 12 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 2      |
      | beta    | 1      |
      | gamma   | 1      |
    And the Workload "web" fails over after 20s and gives back after 20s, with at most 2 extra replicas per cluster
    And I commit the Workload "web" to Git
    # The others absorb gamma's share detectAfter after they start looking, which can be before
    # every replica of the first rollout is ready: the allocation itself is not awaited.
    And the ServiceEndpoint "web" for the Workload "web" with affinity none is committed to Git, its Workload's replicas not awaited

  Scenario: The others name the source that is no target in their failover status
    Then the Workload "web" in cluster "alpha" reports FailoverReady True with reason FailoverActive and a message naming "gamma-prod"
    And the Workload "web" in cluster "beta" reports FailoverReady True with reason FailoverActive and a message naming "is Cilium's cluster.name the ClusterMember name?"
    And the replicas of "web" are:
      | cluster | replicas |
      | gamma   | 3        |
    And no Deployment of "web" was deleted or duplicated
