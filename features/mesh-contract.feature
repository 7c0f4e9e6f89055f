@hermetic
Feature: The ClusterMesh global-service contract
  Cilium ClusterMesh load-balances a global Service over the backends of every cluster that has
  a Service of the same name and namespace marked service.cilium.io/global. A ServiceEndpoint
  gives every member that Service, with the annotations Cilium reads, also in clusters that run
  no replicas: a client there must still find the global service.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"
    And a Workload "api" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 0        |
    And I apply the Workload "api" to every cluster

  Scenario: Every member gets the same annotated Service, also where no replicas run
    When I apply to every cluster:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: ServiceEndpoint
      metadata:
        name: api
      spec:
        workloadRef:
          name: api
        ports:
          - name: http
            port: 80
            targetPort: 8080
        affinity: local
      """
    Then every cluster has the Service "api" with port 80 to 8080 and the annotations:
      | annotation                 | value |
      | service.cilium.io/global   | true  |
      | service.cilium.io/shared   | true  |
      | service.cilium.io/affinity | local |
    And the Service "api" selects the pods of the Workload "api" in every cluster
    And the replicas of "api" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 0        |
    And cluster "gamma" has the Workload "api" but no Deployment for it

  Scenario: Changing the affinity is applied in every member
    Given I apply to every cluster:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: ServiceEndpoint
      metadata:
        name: api
      spec:
        workloadRef:
          name: api
        ports:
          - name: http
            port: 80
        affinity: local
      """
    When I apply to every cluster:
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: ServiceEndpoint
      metadata:
        name: api
      spec:
        workloadRef:
          name: api
        ports:
          - name: http
            port: 80
        affinity: remote
        shared: false
      """
    Then every cluster has the Service "api" with port 80 to 80 and the annotations:
      | annotation                 | value  |
      | service.cilium.io/global   | true   |
      | service.cilium.io/shared   | false  |
      | service.cilium.io/affinity | remote |
