@hermetic @slow @upgrade @host-operators
Feature: Upgrading the operator in place, one cluster at a time
  Every cluster upgrades its own operator on its own schedule, so the previous release and this
  one run side by side in one fleet. The operators of both compute the same allocation and
  render the same objects, so moving a cluster to the new operator restarts no pod and deletes,
  replaces or rewrites nothing, in that cluster or any other; polykube-status shows which cluster
  runs which version, and a VersionSkew notice until every cluster runs the same. A rollback of
  one cluster is held to the same checks. The previous release is the one release/PREVIOUS
  names, built from a git worktree of its commit; on kwok an operator is a host process, so
  moving a cluster stops its operator and starts the other binary with the same identity, as a
  rollout of the operator's Deployment would.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: Moving every cluster from the previous release to this one restarts no pod
    Given every cluster runs the operator of the previous release
    And a Workload "web" with strategy MultiCloudWeighted and 12 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 50     |
      | beta    | 30     |
      | gamma   | 20     |
    And a Workload "shop" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 1        |
      | beta    | 1        |
      | gamma   | 2        |
    And the Workload "shop" has the override:
      """
      name: onprem-registry
      clusterSelector:
        labelSelector:
          matchLabels:
            site: onprem
      images:
        - container: app
          registry: registry.onprem.example
      """
    And a Workload "api" autoscaled between 4 and 12 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 1      |
      | beta    | 1      |
    And a Workload "checkout" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 1        |
      | beta    | 1        |
      | gamma   | 1        |
    And cluster "alpha" has the Secret "checkout-db" with the keys "host" and "password"
    And cluster "beta" has the Secret "checkout-db" with the keys "host" and "password"
    And cluster "gamma" has the Secret "checkout-db" with the keys "host" and "password"
    When I commit the Workload "web" to Git
    And I commit the Workload "shop" to Git
    And I commit the Workload "api" to Git
    And I commit the Workload "checkout" to Git
    And I apply to every cluster:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: DatastoreBinding
      metadata:
        name: checkout-db
      spec:
        workloadRef:
          name: checkout
        secretRef:
          name: checkout-db
        prefix: DB_
        env:
          - name: HOST
            key: host
          - name: PASSWORD
            key: password
      """
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 6        |
      | beta    | 4        |
      | gamma   | 2        |
    And in cluster "gamma" the container "app" of "shop" runs its image from the registry "registry.onprem.example"
    And the HPA of "api" in each cluster scales between:
      | cluster | min | max |
      | alpha   | 2   | 6   |
      | beta    | 2   | 6   |
    And in cluster "gamma" every container of the Deployment "checkout" reads these env vars by secretKeyRef:
      | env         | secret      | key      |
      | DB_HOST     | checkout-db | host     |
      | DB_PASSWORD | checkout-db | password |
    And polykube-status shows each cluster's operator version:
      | cluster | release  |
      | alpha   | previous |
      | beta    | previous |
      | gamma   | previous |
    And it exits with code 0 (healthy)
    And I record every pod and every managed object in every cluster

    When cluster "alpha" moves to the operator of this release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    And polykube-status shows each cluster's operator version:
      | cluster | release  |
      | alpha   | this     |
      | beta    | previous |
      | gamma   | previous |
    And it exits with code 0 (healthy)
    And every cluster computed the same allocation for "web"
    And every cluster computed the same allocation for "api"

    When cluster "beta" moves to the operator of this release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    And polykube-status shows each cluster's operator version:
      | cluster | release  |
      | alpha   | this     |
      | beta    | this     |
      | gamma   | previous |
    And it exits with code 0 (healthy)
    And every cluster computed the same allocation for "web"

    When cluster "gamma" moves to the operator of this release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    And polykube-status shows each cluster's operator version:
      | cluster | release |
      | alpha   | this    |
      | beta    | this    |
      | gamma   | this    |
    And it exits with code 0 (healthy)
    And every cluster computed the same allocation for "web"
    And every cluster computed the same allocation for "shop"
    And every cluster computed the same allocation for "api"
    And every cluster computed the same allocation for "checkout"

    When cluster "beta" moves to the operator of the previous release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    And polykube-status shows each cluster's operator version:
      | cluster | release  |
      | alpha   | this     |
      | beta    | previous |
      | gamma   | this     |
    And it exits with code 0 (healthy)
