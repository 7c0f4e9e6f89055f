@hermetic @registry
Feature: Installing Polykube from its release in a registry
  A user installs Polykube as Flux installs anything it did not build: `make release` and
  `make publish` put the operator image and the Flux artifact of the gitops tree in an OCI
  registry, signed with cosign (make release SIGN_KEY=…), and each cluster's Flux reads the
  artifact through an OCIRepository that verifies that signature with the release's public key, its
  Kustomization applying the operator with that cluster's name (examples/flux-oci/polykube.yaml,
  the manifests the README gives). The test bed runs a registry of its own for this. On kind
  the operator Deployment's rollout is the install: every replica runs the image its kubelet
  pulled from the registry, by the digest the Deployment names. kwok runs no pods, so there the
  test bed pulls the image the applied Deployment names from the registry and runs the binary
  inside it as the cluster's operator: the binary that serves is the one the registry holds.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario: Flux installs the operator from the release's artifact in the registry
    Given a release of this tree is published to the test bed's registry
    When cluster "alpha" installs Polykube from the release's Flux artifact in the registry
    Then Flux in cluster "alpha" verified the cosign signature of the release's artifact
    And the operator Deployment Flux applied in cluster "alpha" names the release's image by digest and the cluster's name
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

  Scenario: Flux refuses a release whose signature does not verify, and the cluster keeps what it runs
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
    Given a release of this tree, signed with a key the clusters do not trust, is published to the test bed's registry
    When cluster "alpha" is pointed at the release's Flux artifact in the registry
    Then Flux in cluster "alpha" refuses the release's artifact: its signature does not verify
    And cluster "alpha" still runs the operator it ran before
    And the replicas of "web" are:
      | cluster | replicas |
      | alpha   | 2        |
      | beta    | 1        |
      | gamma   | 1        |
    And every cluster computed the same allocation for "web"
