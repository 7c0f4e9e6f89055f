@hermetic
Feature: Binding a Workload to a datastore through a local Secret
  Connection details live in a Secret that each cluster holds for itself; Polykube never copies
  Secrets between clusters. A DatastoreBinding wires the Secret's keys into the Workload's
  containers as secretKeyRef env vars where the Secret exists, and says clearly where it does not.
  No secret value ever appears outside the Secret.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"
    And a Workload "checkout" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | 1        |
      | beta    | 1        |

  Scenario: The Secret is wired where it exists and reported where it is missing
    Given cluster "alpha" has the Secret "checkout-db" with the keys "host" and "password"
    And cluster "beta" has no Secret "checkout-db"
    When I apply the Workload "checkout" to every cluster
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
    Then in cluster "alpha" the DatastoreBinding "checkout-db" is Bound
    And in cluster "alpha" every container of the Deployment "checkout" reads these env vars by secretKeyRef:
      | env         | secret      | key      |
      | DB_HOST     | checkout-db | host     |
      | DB_PASSWORD | checkout-db | password |
    And in cluster "beta" the DatastoreBinding "checkout-db" is not Bound, with reason SecretNotFound and a message naming "checkout-db"
    And the replicas of "checkout" are:
      | cluster | replicas |
      | alpha   | 1        |
      | beta    | 1        |
    And no secret value appears outside the Secrets in any cluster

  Scenario: A missing key is reported with its name
    Given cluster "alpha" has the Secret "checkout-db" with the keys "host"
    When I apply the Workload "checkout" to every cluster
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
        env:
          - name: DB_HOST
            key: host
          - name: DB_PASSWORD
            key: password
      """
    Then in cluster "alpha" the DatastoreBinding "checkout-db" is not Bound, with reason SecretKeyMissing and a message naming "password"
    And no secret value appears outside the Secrets in any cluster
