@hermetic @argocd-central
Feature: Delivery with one central Argo CD and an ApplicationSet
  The article Polykube comes from delivers the fleet with one Argo CD: an ApplicationSet whose
  cluster generator makes an Application per registered cluster. The ApplicationSet here is the
  one in examples/argocd, applied as its README says (only its repoURL and targetRevision point
  at the test bed's Git): it reads clusters/<name>, which vendors the operator, and passes the
  cluster's name to the operator by a Kustomize patch. Argo CD judges the health of Polykube's
  objects by the health checks Polykube ships (gitops/argocd/health-checks.yaml).

  That Argo CD is a hub: it holds the admin credentials of every cluster, which is what
  Polykube's own design avoids (features/argocd-delivery.feature runs the shape that does not).
  The operators still run in each cluster and hold only their own cluster's credentials.

  These scenarios run only on a federation with delivery argocd-central
  (scenarios/topology-argocd-central.yaml, which `make test` runs beside the Flux one).

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: The hub delivers a weighted Workload to every cluster and reports the health of Polykube's kinds
    Healthy, Progressing and Degraded come from the operator's Ready condition: a Workload whose
    selector finds no cluster waits for the roster (NoTargets: Progressing), a DatastoreBinding
    whose Secret no cluster has is Degraded.
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
    And the hub's Argo CD reports, for every cluster, the Workload "web" Healthy
    When the ServiceEndpoint "web" for the Workload "web" with affinity none is committed to Git
    Then the hub's Argo CD reports, for every cluster, the ServiceEndpoint "web" Healthy
    Given a Workload "idle" with strategy MultiCloudWeighted and 2 replicas in total, targeting the clusters labelled:
      | labels   | weight |
      | geo=mars | 1      |
    When I commit the Workload "idle" to Git
    Then the hub's Argo CD reports, for every cluster, the Workload "idle" Progressing
    When I commit to Git, in the scenario's namespace:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: DatastoreBinding
      metadata:
        name: web-db
      spec:
        workloadRef:
          name: web
        secretRef:
          name: web-db
        env:
          - name: DB_HOST
            key: host
      """
    Then the hub's Argo CD reports, for every cluster, the DatastoreBinding "web-db" Degraded

  Scenario: Deleting a generated Application deletes nothing, and the ApplicationSet generates it again
    The example's ApplicationSet sets preserveResourcesOnDeletion, so the Applications it
    generates carry no resources finalizer: deleting one (by hand, or by the ApplicationSet
    when its generator stops producing the cluster) deletes nothing it delivered. The operator,
    the roster and the Workloads keep running, and the Application generated again finds
    everything in place and replaces nothing.
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
    And no Application the hub generated carries Argo CD's resources finalizer
    When I delete the Application the hub generated for "beta", and the ApplicationSet generates it again and it syncs
    Then every cluster still has the Polykube CRDs, the operator's namespace and Deployment, the roster and the Workload "web"
    And every cluster has applied the latest Git revision
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
      | gamma   | 1        |
    And no Deployment of "web" was deleted or duplicated

  Scenario: A commit that drops this cluster's ClusterMember, pruned by the hub, deletes no workload
    The hub prunes what leaves Git, with foreground propagation by default, in every cluster at
    once. The operator in alpha then has no ClusterMember of its own: it changes nothing there
    and says why, so the Deployment the label selector no longer reaches keeps running. Restoring
    the roster in Git brings alpha back and its share with it, and nothing in alpha was restarted.
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
