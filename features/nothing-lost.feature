@hermetic @slow @safety
Feature: Nothing is lost by a mistake
  A copied Flux entry point, a renamed Kustomization, a Workload deleted by hand: ordinary
  mistakes happen in every fleet. None of them deletes a workload or restarts its pods. An
  operator pins itself to the cluster it runs in and refuses to act as another member; the
  Polykube CRDs cannot be pruned by Flux (or Argo CD); a Workload applied again takes back the
  Deployment that Polykube made for it; while a cluster's own ClusterMember is being deleted, its
  operator changes nothing there.

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

  Scenario: An operator started with another cluster's name changes nothing
    When the operator of cluster "alpha" is started with the cluster name "gamma"
    Then the operator refuses to run, saying that this cluster is pinned to "alpha" and not "gamma"
    And the ClusterMember "alpha" in cluster "alpha" reports OperatorIdentity False with reason IdentityMismatch
    And the replicas of "web" stay as they are while the operator is refused
    When the operator of cluster "alpha" is restarted
    Then the ClusterMember "alpha" in cluster "alpha" reports OperatorIdentity True with reason IdentityPinned
    When I commit to Git the Workload "web" with 9 replicas in total
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 3        |
      | gamma   | 3        |
    And no Deployment of "web" was deleted or duplicated

  # PolykubeIdentityRefused waits 1m in gitops/monitoring; the test bed's Prometheus evaluates
  # it with a `for` of at most 20s (scenarios/topology.yaml, prometheus.alertForAtMost).
  @prometheus
  Scenario: A replica started with another cluster's name raises the identity alert in that cluster
    A rollout of the operator with a CLUSTER_NAME copied from another cluster starts a new
    replica while the old one still runs: the new one refuses, and the one that runs reports it.
    When a second replica of the operator of cluster "alpha" is started with the cluster name "gamma"
    Then the operator refuses to run, saying that this cluster is pinned to "alpha" and not "gamma"
    And the alert PolykubeIdentityRefused fires for the ClusterMember "alpha" in cluster "alpha" and in no other cluster
    When the operator of cluster "alpha" is rolled out again with its own name
    Then the ClusterMember "alpha" in cluster "alpha" reports OperatorIdentity True with reason IdentityPinned
    And the alert PolykubeIdentityRefused for the ClusterMember "alpha" is no longer active in any cluster

  Scenario: Removing the operator's Kustomization deletes no workload
    When the operator's Flux Kustomization is deleted in every cluster
    Then the Polykube CRDs, the Workload "web" and its Deployments stay in every cluster
    When the operator's Flux Kustomization is created again as "polykube-operator-renamed" in every cluster
    Then the Polykube CRDs, the Workload "web" and its Deployments stay in every cluster
    When the operator's Flux Kustomization is renamed from "polykube-operator-renamed" to "polykube-operator" in every cluster
    Then the Polykube CRDs, the Workload "web" and its Deployments stay in every cluster
    When I commit to Git the Workload "web" with 9 replicas in total
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 3        |
      | gamma   | 3        |
    And no Deployment of "web" was deleted or duplicated

  Scenario: A Workload deleted and applied again keeps its pods
    When the Workload "web" is deleted in cluster "alpha" leaving its objects (--cascade=orphan)
    And Flux in cluster "alpha" applies its last revision again
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 2        |
    And the pods of "web" in cluster "alpha" are the ones it had before
    And no Deployment of "web" was deleted or duplicated

  Scenario: Deleting this cluster's own ClusterMember deletes no workload
    A foreground prune (Argo CD's default) or any finalizer keeps a deleted ClusterMember
    terminating; one commit that drops the roster does that in every cluster at once. A
    terminating member is no target of a label selector, yet the Workloads that reach the
    cluster by label keep their Deployments: the operator changes nothing there and says why.
    Given a Workload "cart" with strategy MultiCloudWeighted and 4 replicas in total, targeting the clusters labelled:
      | labels | weight |
      | geo=eu | 1      |
    And I commit the Workload "cart" to Git
    And the replicas of "cart" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
    When the ClusterMember "alpha" in cluster "alpha" is deleted while a finalizer holds it
    Then the Workload "cart" in cluster "alpha" reports Ready False with reason ClusterMemberTerminating
    And the Workload "web" in cluster "alpha" reports Ready False with reason ClusterMemberTerminating
    And the replicas of "cart" stay as they are while the ClusterMember "alpha" is terminating
    When the finalizer on the ClusterMember "alpha" in cluster "alpha" is removed
    And Flux in cluster "alpha" applies its last revision again
    Then the replicas of "cart" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
    And no Deployment of "cart" was deleted or duplicated
    And no Deployment of "web" was deleted or duplicated
