# Valid inputs render exactly the manifests under testdata/<case>/ (path relative to the
# GitOps repository root => file content). Update them by rendering and reviewing the diff;
# internal/examplestest applies the same rendering to a real API server with the CRDs.

run "two_clusters_with_defaults" {
  command = plan

  variables {
    federation = { name = "production" }
    clusters = {
      "gcp-europe-west3" = {
        provider   = "gcp"
        region     = "europe-west3"
        cluster_id = 2
        pod_cidrs  = ["10.2.0.0/16"]
      }
      "aws-eu-central-1" = {
        provider     = "aws"
        region       = "eu-central-1"
        cluster_id   = 1
        pod_cidrs    = ["10.1.0.0/16"]
        service_cidr = "172.20.0.0/16"
      }
    }
  }

  assert {
    condition     = sort(keys(output.files)) == sort(tolist(fileset("tests/testdata/two-clusters", "**")))
    error_message = "rendered paths ${jsonencode(sort(keys(output.files)))} differ from the files under tests/testdata/two-clusters"
  }

  assert {
    condition     = output.files == { for p in fileset("tests/testdata/two-clusters", "**") : p => file("tests/testdata/two-clusters/${p}") }
    error_message = "rendered files differ from tests/testdata/two-clusters: ${jsonencode([for p, c in output.files : p if c != try(file("tests/testdata/two-clusters/${p}"), "")])}"
  }

  assert {
    condition     = output.cluster_members["aws-eu-central-1"] == file("tests/testdata/two-clusters/federation/members/aws-eu-central-1.yaml")
    error_message = "output.cluster_members differs from output.files"
  }

  assert {
    condition     = output.roster == join("---\n", [for p in ["federation/federation.yaml", "federation/members/aws-eu-central-1.yaml", "federation/members/gcp-europe-west3.yaml"] : file("tests/testdata/two-clusters/${p}")])
    error_message = "output.roster is not the Federation followed by the ClusterMembers in name order"
  }
}

run "every_option" {
  command = plan

  variables {
    federation = { name = "global.example", max_connected_clusters = 511 }
    clusters = {
      "onprem-fra-1" = {
        provider     = "onprem"
        region       = "fra"
        zone         = "rack-7"
        cluster_id   = 300
        pod_cidrs    = ["10.8.0.0/17", "10.8.128.0/17", "fd00:8::/104"]
        service_cidr = "10.96.0.0/16"
        labels = {
          "jurisdiction"            = "eu"
          "cost-class"              = "cheap"
          "example.com/quoted: key" = "yes"
        }
        overlay = { type = "netmaker", endpoint = "203.0.113.10:51821" }
      }
      "123" = {
        provider   = "other"
        cluster_id = 511
        pod_cidrs  = ["10.9.0.0/16", "fd00:9::/104"]
        overlay    = { type = "netmaker", endpoint = "[2001:db8::1]:51821" }
      }
    }
    flux = {
      name        = "fleet"
      namespace   = "gitops"
      source_kind = "OCIRepository"
      source_name = "fleet-repo"
      interval    = "1m30s"
      prune       = false
    }
    layout = {
      federation_dir = "deploy/roster"
      clusters_dir   = "deploy/clusters"
      flux_dir       = "bootstrap"
    }
    cluster_resources = ["workloads/production"]
    operator = {
      url      = "https://git.example.com/mirrors/polykube.git"
      tag      = "v0.1.0-alpha.1"
      path     = "./deploy/operator"
      interval = "30m"
    }
  }

  assert {
    condition     = sort(keys(output.files)) == sort(tolist(fileset("tests/testdata/every-option", "**")))
    error_message = "rendered paths ${jsonencode(sort(keys(output.files)))} differ from the files under tests/testdata/every-option"
  }

  assert {
    condition     = output.files == { for p in fileset("tests/testdata/every-option", "**") : p => file("tests/testdata/every-option/${p}") }
    error_message = "rendered files differ from tests/testdata/every-option: ${jsonencode([for p, c in output.files : p if c != try(file("tests/testdata/every-option/${p}"), "")])}"
  }
}

run "ipv4_and_ipv6_pod_cidrs_do_not_collide" {
  command = plan

  variables {
    federation = { name = "dual-stack" }
    clusters = {
      "a" = { provider = "kind", cluster_id = 1, pod_cidrs = ["10.0.0.0/8", "fd00:a::/104"] }
      "b" = { provider = "kind", cluster_id = 2, pod_cidrs = ["11.0.0.0/8", "fd00:b::/104"] }
    }
  }

  assert {
    condition     = length(output.cluster_members) == 2
    error_message = "adjacent IPv4 and disjoint IPv6 pod CIDRs must be accepted"
  }
}
