@hermetic @slow @upgrade @registry
Feature: Upgrading the operator in place, one cluster at a time
  Every cluster upgrades its own operator on its own schedule, so the previous release and this
  one run side by side in one fleet. The operators of both compute the same allocation and
  render the same objects, so moving a cluster to the new operator restarts no pod and deletes,
  replaces or rewrites nothing, in that cluster or any other; polykube-status shows which cluster
  runs which version, and a VersionSkew notice until every cluster runs the same. A rollback of
  one cluster is held to the same checks. The previous release is the one release/PREVIOUS
  names, its operator built from a git worktree of its commit. Where the operators run in the
  clusters (kind, k0s) the repository holds that release's operator base (its CRDs, RBAC and
  Deployment) beside this one's, its image in the test bed's registry, and moving a cluster is a
  commit of the one file in the cluster's entry point that names the release: its Flux rolls the
  operator's Deployment. On kwok an operator is a host process, so moving a cluster stops its
  operator and starts the other binary with the same identity, as that rollout would.

  The fleet's Workloads take every kind the operator serves: weighted, an override, autoscaled,
  bound to a datastore, and one that fails over. The failover Workload reads its peers' ready
  endpoints from the slices mirrored into each cluster (Cilium's on kind and k0s, the test bed's
  mesh mirror on kwok), so every move must leave its failover state as it was: nothing absorbed,
  nothing waiting, in the clusters on either release.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  @mesh-mirror
  Scenario: Moving every cluster from the previous release to this one restarts no pod
    Given every cluster runs the operator of the previous release
    And every cluster's endpoints of global Services are mirrored into the others
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
    And a Workload "backend" with strategy MultiCloudWeighted and 6 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 1      |
      | beta    | 1      |
      | gamma   | 1      |
    And the Workload "backend" fails over after 20s and gives back after 20s, with at most 2 extra replicas per cluster
    And cluster "alpha" has the Secret "checkout-db" with the keys "host" and "password"
    And cluster "beta" has the Secret "checkout-db" with the keys "host" and "password"
    And cluster "gamma" has the Secret "checkout-db" with the keys "host" and "password"
    When I commit the Workload "web" to Git
    And I commit the Workload "shop" to Git
    And I commit the Workload "api" to Git
    And I commit the Workload "checkout" to Git
    And I commit the Workload "backend" to Git
    And the ServiceEndpoint "backend" for the Workload "backend" with affinity none is committed to Git
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
    And the replicas of "backend" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 2        |
    And every cluster sees through the mesh the ready replicas of "backend" in every other cluster
    And the failover status of "backend" is:
      | cluster | base | extra | absorbs | pending |
      | alpha   | 2    | 0     | -       | -       |
      | beta    | 2    | 0     | -       | -       |
      | gamma   | 2    | 0     | -       | -       |
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
    And every cluster computed the same allocation for "backend"
    And the failover status of "backend" is:
      | cluster | base | extra | absorbs | pending |
      | alpha   | 2    | 0     | -       | -       |
      | beta    | 2    | 0     | -       | -       |
      | gamma   | 2    | 0     | -       | -       |

    When cluster "beta" moves to the operator of this release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    And polykube-status shows each cluster's operator version:
      | cluster | release  |
      | alpha   | this     |
      | beta    | this     |
      | gamma   | previous |
    And it exits with code 0 (healthy)
    And every cluster computed the same allocation for "web"
    And every cluster computed the same allocation for "backend"
    And the failover status of "backend" is:
      | cluster | base | extra | absorbs | pending |
      | alpha   | 2    | 0     | -       | -       |
      | beta    | 2    | 0     | -       | -       |
      | gamma   | 2    | 0     | -       | -       |

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
    And every cluster computed the same allocation for "backend"
    And the failover status of "backend" is:
      | cluster | base | extra | absorbs | pending |
      | alpha   | 2    | 0     | -       | -       |
      | beta    | 2    | 0     | -       | -       |
      | gamma   | 2    | 0     | -       | -       |

    When cluster "beta" moves to the operator of the previous release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    And polykube-status shows each cluster's operator version:
      | cluster | release  |
      | alpha   | this     |
      | beta    | previous |
      | gamma   | this     |
    And it exits with code 0 (healthy)
    And the failover status of "backend" is:
      | cluster | base | extra | absorbs | pending |
      | alpha   | 2    | 0     | -       | -       |
      | beta    | 2    | 0     | -       | -       |
      | gamma   | 2    | 0     | -       | -       |

  # On the datapath the same moves are held to what a user sees: the global Service answers
  # every call, from every cluster, after each move. No backend pod or Service changes during a
  # move (the first check after it), so nothing a call goes through changes while it runs.
  @datapath
  Scenario: The global Service answers every call from every cluster as the fleet moves to this release
    Given every cluster runs the operator of the previous release
    And the clusters are connected by Cilium ClusterMesh
    And a Workload "echo" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 2        |
    And the Workload "echo" runs the echo server that answers with its cluster name
    And I commit the Workload "echo" to Git
    And the ServiceEndpoint "echo" for the Workload "echo" with affinity none is committed to Git
    And a client in cluster "alpha" calls the Service "echo" 60 times
    And every call is answered
    And I record every pod and every managed object in every cluster

    When cluster "alpha" moves to the operator of this release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    When a client in cluster "beta" calls the Service "echo" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha", "beta" and "gamma"

    When cluster "beta" moves to the operator of this release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    When a client in cluster "gamma" calls the Service "echo" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha", "beta" and "gamma"

    When cluster "gamma" moves to the operator of this release
    Then no pod restarted and no object was deleted, replaced or rewritten in any cluster
    When a client in cluster "alpha" calls the Service "echo" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha", "beta" and "gamma"
