@datapath @routing
Feature: Routing through the global service
  With Cilium ClusterMesh connecting the members, a client in any cluster calls the global
  Service by its ordinary name and is answered by backends in every cluster that runs replicas.
  The affinity of the ServiceEndpoint decides whether local backends are preferred. Every echo
  backend answers with the name of the cluster it runs in.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"
    And the clusters are connected by Cilium ClusterMesh
    And a Workload "echo" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 2        |
    And the Workload "echo" runs the echo server that answers with its cluster name
    And I commit the Workload "echo" to Git

  Scenario: A client reaches the global service and is answered from every cluster
    Given the ServiceEndpoint "echo" for the Workload "echo" with affinity none is committed to Git
    When a client in cluster "alpha" calls the Service "echo" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha", "beta" and "gamma"

  Scenario: Local affinity keeps traffic local while local backends exist
    Given the ServiceEndpoint "echo" for the Workload "echo" with affinity local is committed to Git
    When a client in cluster "beta" calls the Service "echo" 60 times
    Then every call is answered
    And every answer comes from cluster "beta"

  # 1 MiB answers are hundreds of full-size segments each: on a path whose MTU is smaller than
  # the one Cilium was given (an overlay's WireGuard header on top of Cilium's VXLAN) they would
  # stall or stop short, while the small answers of the other scenarios pass. Every byte is
  # checked; the figures (time per call, throughput) are printed for the report.
  @mtu
  Scenario: Large answers cross between clusters whole
    Given the ServiceEndpoint "echo" for the Workload "echo" with affinity none is committed to Git
    When I commit to Git the Workload "echo" with cluster "alpha" at 0 replicas
    And the replicas of "echo" are:
      | cluster | replicas |
      | alpha   | 0        |
      | beta    | 2        |
      | gamma   | 2        |
    And a client in cluster "alpha" fetches 20 answers of 1024 KiB each from the Service "echo"
    Then every answer arrives whole
    And answers come from each of the clusters "beta" and "gamma"
    And no answer comes from cluster "alpha"

  Scenario: A global Service with replicas in two clusters is answered by both, from every cluster
    Given the ServiceEndpoint "echo" for the Workload "echo" with affinity none is committed to Git
    When I commit to Git the Workload "echo" with cluster "gamma" at 0 replicas
    And the replicas of "echo" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 0        |
    And a client in cluster "alpha" calls the Service "echo" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha" and "beta"
    And no answer comes from cluster "gamma"
    When a client in cluster "beta" calls the Service "echo" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha" and "beta"
    And no answer comes from cluster "gamma"
    When a client in cluster "gamma" calls the Service "echo" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha" and "beta"
    And no answer comes from cluster "gamma"

  Scenario: A Service that is not shared keeps each cluster's backends to itself
    Given the ServiceEndpoint "echo" for the Workload "echo" with affinity none and shared false is committed to Git
    When a client in cluster "beta" calls the Service "echo" 60 times
    Then every call is answered
    And every answer comes from cluster "beta"
    When a client in cluster "gamma" calls the Service "echo" 60 times
    Then every call is answered
    And every answer comes from cluster "gamma"

  @slow
  Scenario: Scaling a cluster to zero moves its traffic to the others
    Given the ServiceEndpoint "echo" for the Workload "echo" with affinity local is committed to Git
    When I commit to Git the Workload "echo" with cluster "alpha" at 0 replicas
    And the replicas of "echo" are:
      | cluster | replicas |
      | alpha   | 0        |
      | beta    | 2        |
      | gamma   | 2        |
    And a client in cluster "alpha" calls the Service "echo" 60 times
    Then every call is answered
    And no answer comes from cluster "alpha"
    And answers come from each of the clusters "beta" and "gamma"

  @slow @partition
  Scenario: A network partition leaves each side serving its own backends, and the mesh heals
    Given the ServiceEndpoint "echo" for the Workload "echo" with affinity none is committed to Git
    When the network between cluster "alpha" and the other clusters is cut
    And a client in cluster "alpha" calls the Service "echo" 60 times
    Then every call is answered
    And every answer comes from cluster "alpha"
    When a client in cluster "beta" calls the Service "echo" 60 times
    Then every call is answered
    And no answer comes from cluster "alpha"
    And answers come from each of the clusters "beta" and "gamma"
    And the replicas of "echo" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 2        |
    When I run polykube-status against every cluster
    Then it shows for "echo" the desired and ready replicas of each cluster:
      | cluster | desired | ready |
      | alpha   | 2       | 2     |
      | beta    | 2       | 2     |
      | gamma   | 2       | 2     |
    When the network between cluster "alpha" and the other clusters is restored
    And a client in cluster "alpha" calls the Service "echo" 60 times
    Then every call is answered
    And answers come from each of the clusters "alpha", "beta" and "gamma"
