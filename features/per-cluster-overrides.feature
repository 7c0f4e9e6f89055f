@hermetic
Feature: One manifest, per-cluster differences
  Every cluster receives the same Workload. An override selects clusters, by name or by the
  labels of their ClusterMember, and changes typed parts of the pod template there: an image's
  registry, repository or tag, env, resources, node selector, tolerations, pod labels and
  annotations. Each operator applies only the overrides that select its own cluster, in order, so
  the spec stays byte-identical everywhere and only the Deployments differ. The suite's roster
  labels alpha and beta geo=eu, and gamma geo=us and site=onprem.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: The on-prem cluster pulls from its own registry
    Given a Workload "web" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 2        |
      | gamma   | 2        |
    And the Workload "web" has the override:
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
    When I commit the Workload "web" to Git
    Then in cluster "gamma" the container "app" of "web" runs its image from the registry "registry.onprem.example"
    And in clusters "alpha" and "beta" the container "app" of "web" runs its image as written
    And the Workload "web" reports these overrides applied:
      | cluster | overrides       |
      | alpha   |                 |
      | beta    |                 |
      | gamma   | onprem-registry |
    And every cluster computed the same allocation for "web"

  Scenario: Overrides apply in order, and one that selects no cluster changes nothing
    Given a Workload "web" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 1        |
      | gamma   | 1        |
    And the Workload "web" has the override:
      """
      name: eu-mirror
      clusterSelector:
        labelSelector:
          matchLabels:
            geo: eu
      images:
        - container: app
          registry: mirror.eu.example
      """
    And the Workload "web" has the override:
      """
      name: alpha-own-mirror
      clusterSelector:
        clusterNames: [alpha]
      images:
        - container: app
          registry: mirror.alpha.example
      """
    And the Workload "web" has the override:
      """
      name: mars-only
      clusterSelector:
        labelSelector:
          matchLabels:
            geo: mars
      images:
        - container: app
          registry: mirror.mars.example
      """
    When I commit the Workload "web" to Git
    Then in cluster "alpha" the container "app" of "web" runs its image from the registry "mirror.alpha.example"
    And in cluster "gamma" the container "app" of "web" runs its image as written
    And the Workload "web" reports these overrides applied:
      | cluster | overrides                   |
      | alpha   | eu-mirror, alpha-own-mirror |
      | gamma   |                             |
