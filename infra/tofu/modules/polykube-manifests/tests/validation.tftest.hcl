# Each invalid input is refused by the variable validation that names the problem. The error
# messages themselves are checked by internal/examplestest (TestTofuModule_InvalidInputs), since
# expect_failures only asserts which check failed.

variables {
  federation = { name = "production" }
  clusters = {
    "aws-eu-central-1" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0/16"] }
    "gcp-europe-west3" = { provider = "gcp", cluster_id = 2, pod_cidrs = ["10.2.0.0/16"] }
  }
}

run "baseline_is_valid" {
  command = plan
}

run "duplicate_cluster_ids" {
  command = plan
  variables {
    clusters = {
      "a" = { provider = "aws", cluster_id = 7, pod_cidrs = ["10.1.0.0/16"] }
      "b" = { provider = "gcp", cluster_id = 7, pod_cidrs = ["10.2.0.0/16"] }
    }
  }
  expect_failures = [var.clusters]
}

run "cluster_id_zero" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 0, pod_cidrs = ["10.1.0.0/16"] } }
  }
  expect_failures = [var.clusters]
}

run "cluster_id_above_255" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 256, pod_cidrs = ["10.1.0.0/16"] } }
  }
  expect_failures = [var.clusters]
}

run "cluster_id_above_511" {
  command = plan
  variables {
    federation = { name = "production", max_connected_clusters = 511 }
    clusters   = { "a" = { provider = "aws", cluster_id = 512, pod_cidrs = ["10.1.0.0/16"] } }
  }
  expect_failures = [var.clusters]
}

run "cluster_id_up_to_511_with_511" {
  command = plan
  variables {
    federation = { name = "production", max_connected_clusters = 511 }
    clusters   = { "a" = { provider = "aws", cluster_id = 511, pod_cidrs = ["10.1.0.0/16"] } }
  }
}

run "cluster_id_not_whole" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 1.5, pod_cidrs = ["10.1.0.0/16"] } }
  }
  expect_failures = [var.clusters]
}

run "max_connected_clusters_unsupported" {
  command = plan
  variables {
    federation = { name = "production", max_connected_clusters = 300 }
  }
  expect_failures = [var.federation]
}

run "federation_name_invalid" {
  command = plan
  variables {
    federation = { name = "Production" }
  }
  expect_failures = [var.federation]
}

run "pod_cidrs_overlap_between_clusters" {
  command = plan
  variables {
    clusters = {
      "a" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.0.0.0/8"] }
      "b" = { provider = "gcp", cluster_id = 2, pod_cidrs = ["10.2.0.0/16"] }
    }
  }
  expect_failures = [var.clusters]
}

run "pod_cidrs_overlap_within_a_cluster" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0/16", "10.1.128.0/17"] } }
  }
  expect_failures = [var.clusters]
}

run "ipv6_pod_cidrs_overlap" {
  command = plan
  variables {
    clusters = {
      "a" = { provider = "aws", cluster_id = 1, pod_cidrs = ["fd00::/104"] }
      "b" = { provider = "gcp", cluster_id = 2, pod_cidrs = ["fd00::1:0/112"] }
    }
  }
  expect_failures = [var.clusters]
}

run "pod_cidr_not_a_cidr" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0"] } }
  }
  expect_failures = [var.clusters]
}

run "no_pod_cidrs" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 1, pod_cidrs = [] } }
  }
  expect_failures = [var.clusters]
}

run "service_cidr_not_a_cidr" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0/16"], service_cidr = "172.20.0.0/33" } }
  }
  expect_failures = [var.clusters]
}

run "cluster_name_too_long" {
  command = plan
  variables {
    clusters = { "aws-eu-central-1-production-blue-1" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0/16"] } }
  }
  expect_failures = [var.clusters]
}

run "cluster_name_not_a_dns_label" {
  command = plan
  variables {
    clusters = { "AWS_eu" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0/16"] } }
  }
  expect_failures = [var.clusters]
}

run "unknown_provider" {
  command = plan
  variables {
    clusters = { "a" = { provider = "digitalocean", cluster_id = 1, pod_cidrs = ["10.1.0.0/16"] } }
  }
  expect_failures = [var.clusters]
}

run "netmaker_without_endpoint" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0/16"], overlay = { type = "netmaker" } } }
  }
  expect_failures = [var.clusters]
}

run "overlay_endpoint_without_port" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0/16"], overlay = { type = "netmaker", endpoint = "wg.example.com" } } }
  }
  expect_failures = [var.clusters]
}

run "unknown_overlay" {
  command = plan
  variables {
    clusters = { "a" = { provider = "aws", cluster_id = 1, pod_cidrs = ["10.1.0.0/16"], overlay = { type = "tailscale" } } }
  }
  expect_failures = [var.clusters]
}

run "no_clusters" {
  command = plan
  variables {
    clusters = {}
  }
  expect_failures = [var.clusters]
}

run "flux_interval_not_a_duration" {
  command = plan
  variables {
    flux = { interval = "ten minutes" }
  }
  expect_failures = [var.flux]
}

run "flux_unknown_source_kind" {
  command = plan
  variables {
    flux = { source_kind = "HelmRepository" }
  }
  expect_failures = [var.flux]
}

run "layout_leaves_the_repository" {
  command = plan
  variables {
    layout = { clusters_dir = "../clusters" }
  }
  expect_failures = [var.layout]
}

run "layout_dirs_collide" {
  command = plan
  variables {
    layout = { clusters_dir = "gitops", flux_dir = "gitops" }
  }
  expect_failures = [var.layout]
}

run "cluster_resources_leave_the_repository" {
  command = plan
  variables {
    cluster_resources = ["../../etc"]
  }
  expect_failures = [var.cluster_resources]
}
