@hermetic @slow @mesh-mirror
Feature: Capacity failover
  A Workload with distribution.failover keeps its capacity when a cluster stops serving its
  share. Each other cluster sees, in the EndpointSlices Cilium mirrors into it for the
  Workload's global Service, how many ready endpoints every peer serves; once a peer has missed
  its share for detectAfter, the cluster runs extra replicas for it, split with the others and
  capped by maxSurge. When the peer has served its share again for returnAfter, the extra goes,
  make-before-break. Each operator decides from its own cluster alone: nothing is written to a
  peer, and no Deployment is deleted or made twice.

  On kind, Cilium's operator mirrors them (Helm clustermesh.enableEndpointSliceSynchronization,
  with clustermesh.cacheTTL so that a lost peer's endpoints go), and the calls of a client
  show who serves. On kwok there is no Cilium: the test bed's mesh mirror stands in for it. It
  holds every cluster's credentials (the operators still hold only their own) and copies each
  cluster's EndpointSlices of a global Service annotated
  service.cilium.io/global-sync-endpoint-slices into the others, labelled as Cilium 1.20 labels
  mirrored slices, and removes a stopped cluster's after a cache TTL, as Cilium's
  clustermesh.cacheTTL does (docs/testbed.md).

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"
    And every cluster's endpoints of global Services are mirrored into the others
    And a Workload "web" with strategy MultiCloudWeighted and 12 replicas in total, targeting:
      | cluster | weight |
      | alpha   | 2      |
      | beta    | 1      |
      | gamma   | 1      |
    And the Workload "web" fails over after 20s and gives back after 20s, with at most 2 extra replicas per cluster
    And I commit the Workload "web" to Git
    And the ServiceEndpoint "web" for the Workload "web" with affinity none is committed to Git
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 6        |
      | beta    | 3        |
      | gamma   | 3        |
    And every cluster sees through the mesh the ready replicas of "web" in every other cluster
    # Nothing absorbed and nothing waiting: during the first rollout a peer's share can be
    # missing from the mirrored slices for longer than detectAfter on a slow machine, and a
    # scenario that changed the timing before that was settled would see it act later.
    And the failover status of "web" is:
      | cluster | base | extra | absorbs | pending |
      | alpha   | 6    | 0     | -       | -       |
      | beta    | 3    | 0     | -       | -       |
      | gamma   | 3    | 0     | -       | -       |

  Scenario: The others absorb a stopped cluster's share, capped, and give it back once it serves again
    When the API server of cluster "alpha" is stopped
    Then the clusters other than "alpha" no longer see its endpoints of "web" through the mesh
    And once "alpha" has been gone from the mesh for detectAfter, the replicas of "web" are:
      | cluster | replicas |
      | beta    | 5        |
      | gamma   | 5        |
    And the failover status of "web" is:
      | cluster | base | extra | absorbs  |
      | beta    | 3    | 2     | alpha: 6 |
      | gamma   | 3    | 2     | alpha: 6 |
    When the API server of cluster "alpha" is started again
    Then every cluster sees through the mesh the ready replicas of "web" in every other cluster
    And once "alpha" has served its share again for returnAfter, the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 6        |
      | beta    | 3        |
      | gamma   | 3        |
    And the failover status of "web" is:
      | cluster | base | extra | absorbs |
      | alpha   | 6    | 0     | -       |
      | beta    | 3    | 0     | -       |
      | gamma   | 3    | 0     | -       |
    And no Deployment of "web" was deleted or duplicated
    And the report gives how long the failover of "web" away from "alpha" took

  # The shipped PolykubeFailoverActiveTooLong waits 30 minutes; the test bed's Prometheus
  # evaluates the same expression with every `for` at most 20s (scenarios/topology.yaml,
  # prometheus.alertForAtMost), so the alert is seen to fire and to clear.
  @prometheus
  Scenario: The failover alert fires while the others absorb a stopped cluster's share and clears once it serves again
    When the API server of cluster "alpha" is stopped
    Then the clusters other than "alpha" no longer see its endpoints of "web" through the mesh
    And once "alpha" has been gone from the mesh for detectAfter, the replicas of "web" are:
      | cluster | replicas |
      | beta    | 5        |
      | gamma   | 5        |
    And the alert PolykubeFailoverActiveTooLong fires for "web" in clusters "beta" and "gamma"
    # When the extra replicas go is the first scenario's to check; this one waits for it.
    When the API server of cluster "alpha" is started again
    Then every cluster sees through the mesh the ready replicas of "web" in every other cluster
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 6        |
      | beta    | 3        |
      | gamma   | 3        |
    And the alert PolykubeFailoverActiveTooLong for "web" is no longer active in any cluster

  # gitops/monitoring/dashboard.json has a panel for each Polykube metric; some series exist
  # only once something happened (a drift set back, a reconcile error, a suspended Workload, a
  # failover), so the scenario makes each happen before it runs every panel's query. The test
  # bed runs its operators without leader election (an operator that cannot renew its Lease
  # exits, and no kubelet restarts a host process), so the "Leader" panel's operator is turned
  # to it here, in a cluster whose API server stays up.
  @prometheus
  Scenario: Every panel of the dashboard shows a series while a failover runs
    Given the operator of cluster "beta" runs with leader election, as gitops/operator runs it
    And the operator of cluster "beta" holds a leader election Lease in "polykube-system"
    And I apply to every cluster:
      """
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: clash
      spec:
        replicas: 0
        selector:
          matchLabels: {app: clash}
        template:
          metadata:
            labels: {app: clash}
          spec:
            containers:
              - name: app
                image: example.com/clash:v1
      """
    And a Workload "clash" with strategy Static, targeting:
      | cluster | replicas |
      | beta    | 1        |
    And I commit the Workload "clash" to Git
    And a Workload "paused" with strategy Static, targeting:
      | cluster | replicas |
      | beta    | 1        |
    And I commit to Git the Workload "paused" suspended
    Then the Workload "clash" in cluster "beta" reports Ready False with reason Conflict
    And every operator reports the Workload "paused" suspended
    When someone scales the Deployment of "web" in cluster "beta" to 9 replicas by hand
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 6        |
      | beta    | 3        |
      | gamma   | 3        |
    When the API server of cluster "alpha" is stopped
    Then the clusters other than "alpha" no longer see its endpoints of "web" through the mesh
    And once "alpha" has been gone from the mesh for detectAfter, the replicas of "web" are:
      | cluster | replicas |
      | beta    | 5        |
      | gamma   | 5        |
    And every panel of the dashboard shows a series from a cluster's Prometheus

  Scenario: A blip shorter than detectAfter moves nothing
    # detectAfter is raised for this one to the tier's blip window: on kind a stopped cluster
    # is back in the others' mesh view only a minute or more after its start (Cilium reconnects
    # and resyncs), which 20s cannot call a blip; 180s can. On kwok the mesh mirror has it back
    # in about 15 s, so 60s does, and the hold below is that much shorter. returnAfter may not
    # be shorter than detectAfter (the API refuses a Workload that would give replicas back
    # sooner than it takes them).
    Given the Workload "web" fails over and gives back after the tier's blip window, with at most 2 extra replicas per cluster
    And I commit the Workload "web" to Git
    When the API server of cluster "gamma" is stopped
    And the clusters other than "gamma" no longer see its endpoints of "web" through the mesh
    And the clusters other than "gamma" see it missing 3 replicas of "web" and wait
    And the API server of cluster "gamma" is started again
    Then every cluster sees through the mesh the ready replicas of "web" in every other cluster
    And "gamma" was gone from the mesh for less than the detectAfter of "web"
    And the replicas of "web" stay as they are for its returnAfter
    And the failover status of "web" is:
      | cluster | base | extra | absorbs | pending |
      | alpha   | 6    | 0     | -       | -       |
      | beta    | 3    | 0     | -       | -       |
      | gamma   | 3    | 0     | -       | -       |
    And no Deployment of "web" was deleted or duplicated

  Scenario: Without a view of its peers a cluster absorbs nothing, even when a peer stops
    # Decision 0009. A ServiceEndpoint that is not global has no peers' endpoints mirrored: were
    # that counted as every peer down, every cluster would absorb every peer's share at once.
    When the ServiceEndpoint "web" for the Workload "web" with affinity none and global false is committed to Git
    Then the Workload "web" in cluster "beta" reports FailoverReady False with reason ServiceEndpointMissing and a message naming "web (global: false)"
    And the Workload "web" in cluster "gamma" reports FailoverReady False with reason ServiceEndpointMissing and a message naming "web (global: false)"
    When the API server of cluster "alpha" is stopped
    Then the replicas of "web" are:
      | cluster | replicas |
      | beta    | 3        |
      | gamma   | 3        |
    And the replicas of "web" stay as they are for its returnAfter
    And the failover status of "web" is:
      | cluster | base | extra | absorbs |
      | beta    | 3    | 0     | -       |
      | gamma   | 3    | 0     | -       |
    When the API server of cluster "alpha" is started again
    Then no Deployment of "web" was deleted or duplicated

  Scenario: A cluster that newly gets a share takes it from the others only once it serves it
    # Decision 0011: when the roster grows the others keep their previous share until every
    # peer target is seen serving its own, at most handoverTimeout (10m by default). detectAfter
    # is raised so that the failover of gamma's missing share cannot be what keeps it.
    Given the Workload "web" fails over after 180s and gives back after 180s, with at most 2 extra replicas per cluster
    When I commit to Git the Workload "web" with the weight of cluster "gamma" at 0
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 8        |
      | beta    | 4        |
      | gamma   | 0        |
    When the operator of cluster "gamma" is stopped
    And I commit to Git the Workload "web" with the weight of cluster "gamma" at 1
    Then the Workload "web" in cluster "alpha" reports FailoverReady True with reason Succeeded and a message naming "keeps its previous share of 8"
    And the Workload "web" in cluster "beta" reports FailoverReady True with reason Succeeded and a message naming "keeps its previous share of 4"
    And the replicas of "web" stay as they are while gamma runs none of its new share
    When the operator of cluster "gamma" is restarted
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 6        |
      | beta    | 3        |
      | gamma   | 3        |
    And no Deployment of "web" was deleted or duplicated

  @datapath
  Scenario: While the others absorb a stopped cluster's share, they answer every call
    When the API server of cluster "alpha" is stopped
    Then the clusters other than "alpha" no longer see its endpoints of "web" through the mesh
    And once "alpha" has been gone from the mesh for detectAfter, the replicas of "web" are:
      | cluster | replicas |
      | beta    | 5        |
      | gamma   | 5        |
    When a client in cluster "beta" calls the Service "web" 60 times
    Then every call is answered
    And answers come from each of the clusters "beta" and "gamma"
    When a client in cluster "gamma" calls the Service "web" 60 times
    Then every call is answered
    And answers come from each of the clusters "beta" and "gamma"
    When the API server of cluster "alpha" is started again
    Then every cluster sees through the mesh the ready replicas of "web" in every other cluster
    And once "alpha" has served its share again for returnAfter, the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 6        |
      | beta    | 3        |
      | gamma   | 3        |
    When a client in cluster "beta" calls the Service "web" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha", "beta" and "gamma"
    And no Deployment of "web" was deleted or duplicated
    And the report gives how long the failover of "web" away from "alpha" took
