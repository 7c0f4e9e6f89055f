@hermetic
Feature: Invalid manifests are rejected by the API server
  A mistake in a manifest is caught when it is applied, not later by an operator: the API
  server rejects it with a message that names the offending field, and nothing in the cluster
  changes. Flux surfaces the same message when the manifest comes from Git.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: A Static Workload with a total
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Workload
      metadata:
        name: web
      spec:
        distribution:
          strategy: Static
          replicas: 3
          targets:
            - clusterRef: alpha
              replicas: 3
        template:
          spec:
            containers:
              - name: app
                image: example.com/web:v1
      """
    Then the API server rejects it with a message naming "spec.distribution.replicas"
    And nothing changed in cluster "alpha"

  Scenario: A weighted Workload with neither a total nor replicas per cluster
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Workload
      metadata:
        name: web
      spec:
        distribution:
          strategy: MultiCloudWeighted
          targets:
            - clusterRef: alpha
              weight: 1
        template:
          spec:
            containers:
              - name: app
                image: example.com/web:v1
      """
    Then the API server rejects it with a message naming "spec.distribution"
    And nothing changed in cluster "alpha"

  Scenario: A Workload name that cannot name a Deployment and a Service
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Workload
      metadata:
        name: web.v2
      spec:
        distribution:
          strategy: Static
          targets:
            - clusterRef: alpha
              replicas: 1
        template:
          spec:
            containers:
              - name: app
                image: example.com/web:v1
      """
    Then the API server rejects it with a message naming "DNS-1035"
    And nothing changed in cluster "alpha"

  Scenario: A negative replica count
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Workload
      metadata:
        name: web
      spec:
        distribution:
          strategy: Static
          targets:
            - clusterRef: alpha
              replicas: -1
        template:
          spec:
            containers:
              - name: app
                image: example.com/web:v1
      """
    Then the API server rejects it with a message naming "spec.distribution.targets[0].replicas"
    And nothing changed in cluster "alpha"

  Scenario: A misspelt field
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Workload
      metadata:
        name: web
      spec:
        distribution:
          strategy: Static
          targets:
            - clusterRef: alpha
              replica: 2
        template:
          spec:
            containers:
              - name: app
                image: example.com/web:v1
      """
    Then the API server rejects it with a message naming "spec.distribution.targets[0].replica"
    And nothing changed in cluster "alpha"

  Scenario: A cluster ID outside 1-511
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: ClusterMember
      metadata:
        name: delta
      spec:
        provider: kwok
        mesh:
          clusterID: 0
          podCIDRs: [10.250.0.0/16]
      """
    Then the API server rejects it with a message naming "spec.mesh.clusterID"
    And nothing changed in cluster "alpha"

  Scenario: A pod network that is not a CIDR
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: ClusterMember
      metadata:
        name: delta
      spec:
        provider: kwok
        mesh:
          clusterID: 4
          podCIDRs: [10.250.0.0]
      """
    Then the API server rejects it with a message naming "spec.mesh.podCIDRs"
    And nothing changed in cluster "alpha"

  Scenario: An unknown global-service affinity
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: ServiceEndpoint
      metadata:
        name: web
      spec:
        workloadRef:
          name: web
        ports:
          - name: http
            port: 80
        affinity: nearest
      """
    Then the API server rejects it with a message naming "spec.affinity"
    And nothing changed in cluster "alpha"

  Scenario: An env var name that is not a valid identifier
    When I apply to cluster "alpha":
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
          - name: DB-HOST
            key: host
      """
    Then the API server rejects it with a message naming "spec.env[0].name"
    And nothing changed in cluster "alpha"

  Scenario: A Federation without members
    When I apply to cluster "alpha":
      """
      apiVersion: polykube.kismet.io/v1alpha1
      kind: Federation
      metadata:
        name: empty
      spec:
        members: []
      """
    Then the API server rejects it with a message naming "spec.members"
    And nothing changed in cluster "alpha"
