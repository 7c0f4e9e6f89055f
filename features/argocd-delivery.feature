@hermetic @argocd
Feature: Delivery with Argo CD
  Argo CD can deliver the fleet instead of Flux. Each cluster runs an Argo CD of its own that
  holds only that cluster's credentials and delivers to it alone (its in-cluster destination):
  two Applications take the place of Flux's two Kustomizations, one for the operator (which
  learns its cluster's name from a Kustomize patch of the Application's source, Argo CD having
  no post-build substitution) and one for the cluster's entry point (the roster and the
  workloads). Argo CD judges the health of Polykube's objects by the health checks Polykube
  ships (gitops/argocd/health-checks.yaml), which read the operator's Ready condition.

  These scenarios run only on a federation that delivers with Argo CD
  (scenarios/topology-argocd.yaml, which `make test` runs beside the Flux one).

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: Argo CD delivers a weighted Workload to every cluster and reports it Healthy
    Given a Workload "web" with strategy MultiCloudWeighted and 6 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 3      |
      | beta    | 2      |
      | gamma   | 1      |
    When I commit the Workload "web" to Git
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 2        |
      | gamma   | 1        |
    And every cluster computed the same allocation for "web"
    And Argo CD in every cluster reports the Workload "web" Healthy

  Scenario: Deleting the operator's Application with Argo CD's cascade keeps the CRDs, the Workloads and their Deployments
    Polykube's CRDs and namespace carry argocd.argoproj.io/sync-options: Prune=false,Delete=false.
    Deleting the Application that delivers them, with the resources finalizer, deletes the
    operator (its Deployment, RBAC and ServiceAccount) but neither the CRDs, whose deletion
    would delete every Workload, nor the namespace; nothing that serves traffic goes.
    Given a Workload "web" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
      | gamma   | 1        |
    And I commit the Workload "web" to Git
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
      | gamma   | 1        |
    When I delete the Application "polykube-operator" in every cluster with Argo CD's foreground cascade
    Then every cluster still has the Polykube CRDs, the operator's namespace and the Workload "web", and no longer the operator's Deployment
    And no Deployment of "web" was deleted or duplicated
    When I create the Application "polykube-operator" again in every cluster
    Then every cluster has applied the latest Git revision
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
      | gamma   | 1        |
    And no Deployment of "web" was deleted or duplicated

  Scenario: A commit that drops this cluster's ClusterMember, pruned by Argo CD, deletes no workload
    Argo CD prunes what leaves Git, by default with foreground propagation. One commit that
    drops alpha's ClusterMember from the roster prunes it in every cluster at once. The operator
    in alpha then has no ClusterMember of its own: it changes nothing there and says why, so the
    Deployment that the label selector no longer reaches keeps running. The other clusters see a
    roster without alpha and take its share. Restoring the roster in Git brings alpha back and
    its share with it, and nothing in alpha was restarted.
    Given a Workload "cart" with strategy MultiCloudWeighted and 4 replicas in total, targeting the clusters labelled:
      | labels | weight |
      | geo=eu | 1      |
    And I commit the Workload "cart" to Git
    And the replicas of "cart" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
    When a commit drops the ClusterMember "alpha" from the roster in Git, and Argo CD prunes it with its foreground cascade
    Then the Workload "cart" in cluster "alpha" reports Ready False with reason ClusterUnknown
    And the replicas of "cart" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 4        |
    And no Deployment of "cart" was deleted or duplicated
    When the roster in Git is restored
    Then the replicas of "cart" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
    And the pods of "cart" in cluster "alpha" are the ones it had before
    And no Deployment of "cart" was deleted or duplicated
