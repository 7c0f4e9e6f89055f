@hermetic
Feature: Weighted distribution of replicas over clusters
  A Workload says how its replicas are spread: Static runs exactly the replicas given per
  cluster; MultiCloudWeighted keeps each cluster's explicit replicas and splits the rest of the
  total by weight. Every operator computes the same split from the same spec, so each cluster's
  Deployment runs its share, and raising the total never takes replicas away from a cluster.

  Background:
    Given a federation of the clusters "alpha", "beta" and "gamma"

  Scenario Outline: Static runs the replicas given to each cluster (<alpha>/<beta>/<gamma>)
    Given a Workload "web" with strategy Static, targeting:
      | cluster | replicas |
      | alpha   | <alpha>  |
      | beta    | <beta>   |
      | gamma   | <gamma>  |
    When I commit the Workload "web" to Git
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | <alpha>  |
      | beta    | <beta>   |
      | gamma   | <gamma>  |
    And every cluster computed the same allocation for "web"

    Examples:
      | alpha | beta | gamma |
      | 3     | 2    | 1     |
      | 0     | 4    | 0     |

  Scenario Outline: MultiCloudWeighted splits <total> replicas by weight <alpha weight>/<beta weight>/<gamma weight>
    Given a Workload "web" with strategy MultiCloudWeighted and <total> replicas in total, targeting:
      | cluster | replicas         | weight         |
      | alpha   | <alpha explicit> | <alpha weight> |
      | beta    |                  | <beta weight>  |
      | gamma   |                  | <gamma weight> |
    When I commit the Workload "web" to Git
    Then the replicas of "web" are:
      | cluster | replicas |
      | alpha   | <alpha>  |
      | beta    | <beta>   |
      | gamma   | <gamma>  |
    And the replicas of "web" add up to <total>
    And every cluster computed the same allocation for "web"

    Examples: weights only
      | total | alpha explicit | alpha weight | beta weight | gamma weight | alpha | beta | gamma |
      | 10    |                | 60           | 40          | 0            | 6     | 4    | 0     |
      | 12    |                | 50           | 30          | 20           | 6     | 4    | 2     |
      | 7     |                | 1            | 1           | 5            | 1     | 1    | 5     |

    Examples: explicit replicas stand and the rest is split
      | total | alpha explicit | alpha weight | beta weight | gamma weight | alpha | beta | gamma |
      | 10    | 4              | 90           | 2           | 1            | 4     | 4    | 2     |
      | 5     | 5              | 1            | 0           | 0            | 5     | 0    | 0     |

  Scenario Outline: Scaling up from <from> to <to> replicas never lowers a cluster
    Given a Workload "web" with strategy MultiCloudWeighted and <from> replicas in total, targeting:
      | cluster | weight         |
      | alpha   | <alpha weight> |
      | beta    | <beta weight>  |
      | gamma   | <gamma weight> |
    And I commit the Workload "web" to Git
    And the replicas of "web" add up to <from>
    When I commit to Git the Workload "web" with <to> replicas in total
    Then the replicas of "web" add up to <to>
    And no cluster runs fewer replicas of "web" than before
    And every cluster computed the same allocation for "web"

    Examples:
      | from | to | alpha weight | beta weight | gamma weight |
      | 4    | 5  | 50           | 30          | 20           |
      | 6    | 13 | 7            | 5           | 1            |
