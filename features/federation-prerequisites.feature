@hermetic
Feature: Federation prerequisites for Cilium ClusterMesh
  ClusterMesh needs every member to have a unique cluster ID and a pod network that overlaps no
  other member's, and every member in the roster to be known. Each operator checks its copy of
  the roster locally and reports what is wrong in the Federation's status, so a mistake shows in
  every cluster, named, before any traffic is routed.

  Background:
    Given a federation of these clusters:
      | cluster | cluster ID | pod CIDR      |
      | alpha   | 1          | 10.241.0.0/16 |
      | beta    | 2          | 10.242.0.0/16 |
      | gamma   | 3          | 10.243.0.0/16 |

  Scenario: A correct roster passes every check
    When I apply to every cluster:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Federation
      metadata:
        name: roster-ok
      spec:
        members: [alpha, beta, gamma]
      """
    Then every operator reports the Federation "roster-ok" as Ready
    And every operator reports the Federation "roster-ok" with these checks True: MembersPresent, ClusterIDsValid, ClusterNamesValid, PodCIDRsDisjoint, LocalMemberListed

  Scenario: Two members with the same cluster ID
    When I apply to every cluster:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: ClusterMember
      metadata:
        name: delta
      spec:
        provider: kwok
        mesh:
          clusterID: 2
          podCIDRs: [10.250.0.0/16]
      ---
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Federation
      metadata:
        name: duplicate-ids
      spec:
        members: [alpha, beta, gamma, delta]
      """
    Then every operator reports on the Federation "duplicate-ids" that ClusterIDsValid is False with reason DuplicateClusterID, naming "beta" and "delta"
    And every operator reports the Federation "duplicate-ids" as not Ready

  Scenario: Two members whose pod networks overlap
    When I apply to every cluster:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: ClusterMember
      metadata:
        name: delta
      spec:
        provider: kwok
        mesh:
          clusterID: 4
          podCIDRs: [10.243.128.0/17]
      ---
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Federation
      metadata:
        name: overlapping-pods
      spec:
        members: [alpha, beta, gamma, delta]
      """
    Then every operator reports on the Federation "overlapping-pods" that PodCIDRsDisjoint is False with reason PodCIDROverlap, naming "gamma" and "delta"
    And every operator reports the Federation "overlapping-pods" as not Ready

  Scenario: A member of the roster without a ClusterMember
    When I apply to every cluster:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Federation
      metadata:
        name: missing-member
      spec:
        members: [alpha, beta, gamma, epsilon]
      """
    Then every operator reports on the Federation "missing-member" that MembersPresent is False with reason MemberMissing, naming "epsilon"
    And every operator reports the Federation "missing-member" as not Ready
