@hermetic @registry
Feature: Installing Polykube's release with Helm or with install.yaml
  A user without Flux installs the same release another way: the Helm chart, pushed to an OCI
  registry with `helm push` and installed from there (`helm install polykube oci://… --set
  clusterName=NAME`), or the release's install.yaml, the cluster name set in the one place its
  header shows, applied with `kubectl apply --server-side -f`. Both come from the same kustomize
  base as the Flux artifact, name the release's image by digest and carry the cluster's name.
  The test bed's clusters already run Polykube, delivered by Flux from Git, so each scenario
  first takes that delivery away from its cluster and installs over what Flux applied (Helm
  takes the objects over; kubectl takes the fields Flux owned). On kind the operator
  Deployment's rollout is the install, and a refused start is its new pod's container exiting
  while the pods that ran before keep running (the Deployment rolls without taking a replica
  down first). kwok runs no pods, so there the test bed pulls the image the installed
  Deployment names from the registry and runs the binary inside it as the cluster's operator:
  the binary that serves is the one the registry holds.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: Helm installs the chart from the registry, refuses it without clusterName, and its uninstall keeps the CRDs and the Workloads
    Given a release of this tree is published to the test bed's registry
    And the release's Helm chart is pushed to the test bed's registry
    And Flux no longer delivers the operator of cluster "alpha"
    Then installing the release's chart from the registry into cluster "alpha" without clusterName fails at render, saying to set it, and changes nothing
    When cluster "alpha" installs the release's chart from the registry with clusterName "alpha"
    Then the operator Deployment in cluster "alpha" names the release's image by digest and the cluster's name
    And cluster "alpha" runs the operator binary of that image, pulled from the registry
    Given a Workload "web" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
      | gamma   | 1        |
    When I commit the Workload "web" to Git
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
      | gamma   | 1        |
    And every cluster computed the same allocation for "web"
    When the Helm release is uninstalled from cluster "alpha"
    Then cluster "alpha" keeps Polykube's CRDs, its namespace and the Workload "web"

  Scenario: install.yaml applied with its cluster name left unset is refused by the operator, and applied with it set, runs the release
    Given a release of this tree is published to the test bed's registry
    And Flux no longer delivers the operator of cluster "beta"
    And a Workload "web" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 1        |
      | beta    | 2        |
      | gamma   | 1        |
    When I commit the Workload "web" to Git
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 1        |
      | beta    | 2        |
      | gamma   | 1        |
    When the release's install.yaml, its cluster name left as it is, is applied server-side to cluster "beta"
    Then the operator of cluster "beta" refuses to start, saying which value to set
    And cluster "beta" still runs the operator binary it ran before
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 1        |
      | beta    | 2        |
      | gamma   | 1        |
    When the release's install.yaml with the cluster name "beta" is applied server-side to cluster "beta"
    Then the operator Deployment in cluster "beta" names the release's image by digest and the cluster's name
    And the release's install.yaml with the cluster name "beta" applies client-side to cluster "beta" too
    And cluster "beta" runs the operator binary of that image, pulled from the registry
    Given a Workload "api" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 1        |
      | gamma   | 2        |
    When I commit the Workload "api" to Git
    Then the replicas of "api" are:
      | cluster | replicas |
      | alpha   | 3        |
      | beta    | 1        |
      | gamma   | 2        |
    And every cluster computed the same allocation for "api"
