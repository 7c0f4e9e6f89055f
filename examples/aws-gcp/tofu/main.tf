# Turns the outputs of an EKS stack and a GKE stack into Polykube manifests.
#
# In your own configuration, set the two inputs from your cluster stacks instead of
# terraform.tfvars, for example (terraform-aws-modules/eks and google_container_cluster):
#
#   eks = {
#     cluster_name         = module.eks.cluster_name
#     region               = "eu-central-1"
#     cluster_service_cidr = module.eks.cluster_service_cidr
#     pod_cidr             = "10.1.0.0/16"   # the Cilium cluster-pool you install on EKS
#     netmaker_endpoint    = "${aws_eip.netmaker.public_ip}:51821"
#   }
#   gke = {
#     name               = google_container_cluster.this.name
#     location           = google_container_cluster.this.location
#     cluster_ipv4_cidr  = google_container_cluster.this.cluster_ipv4_cidr
#     services_ipv4_cidr = google_container_cluster.this.services_ipv4_cidr
#     netmaker_endpoint  = "${google_compute_address.netmaker.address}:51821"
#   }
#
# (or read them from each stack's state with terraform_remote_state). This configuration needs
# no provider: `tofu init && tofu apply` renders, `tofu output -json files` prints the files.
# See ../README.md.

terraform {
  required_version = ">= 1.12.0"
}

variable "eks" {
  description = "The EKS cluster: name, region, service CIDR, the pod CIDR of the Cilium cluster-pool on it, and its Netmaker endpoint (host:port)."
  type = object({
    cluster_name         = string
    region               = string
    cluster_service_cidr = string
    pod_cidr             = string
    netmaker_endpoint    = string
  })
}

variable "gke" {
  description = "The GKE cluster: name, location, pod and service ranges, and its Netmaker endpoint (host:port)."
  type = object({
    name               = string
    location           = string
    cluster_ipv4_cidr  = string
    services_ipv4_cidr = string
    netmaker_endpoint  = string
  })
}

locals {
  # A zonal GKE cluster's location is a zone (europe-west3-a), a regional one's a region.
  gke_zonal  = can(regex("-[a-z]$", var.gke.location))
  gke_region = local.gke_zonal ? replace(var.gke.location, "/-[a-z]$/", "") : var.gke.location
}

module "polykube" {
  source = "../../../infra/tofu/modules/polykube-manifests"

  federation = {
    name = "production"
  }

  clusters = {
    (var.eks.cluster_name) = {
      provider     = "aws"
      region       = var.eks.region
      cluster_id   = 1
      pod_cidrs    = [var.eks.pod_cidr]
      service_cidr = var.eks.cluster_service_cidr
      labels       = { "jurisdiction" = "eu", "cost-class" = "standard" }
      # AWS and GCP do not share a network: the clusters' nodes meet on a Netmaker
      # (WireGuard) network, and Cilium ClusterMesh runs over it.
      overlay = { type = "netmaker", endpoint = var.eks.netmaker_endpoint }
    }
    (var.gke.name) = {
      provider     = "gcp"
      region       = local.gke_region
      zone         = local.gke_zonal ? var.gke.location : ""
      cluster_id   = 2
      pod_cidrs    = [var.gke.cluster_ipv4_cidr]
      service_cidr = var.gke.services_ipv4_cidr
      labels       = { "jurisdiction" = "eu", "cost-class" = "standard" }
      overlay      = { type = "netmaker", endpoint = var.gke.netmaker_endpoint }
    }
  }

  # Every cluster's kustomization also includes the workloads; the operator comes from the
  # Polykube repository through the Flux entry point (operator below).
  cluster_resources = ["workloads/production"]

  operator = {
    url = "https://github.com/polykube/polykube"
    tag = "v0.1.0-alpha.1"
  }
}

output "files" {
  description = "The rendered files, keyed by path relative to the GitOps repository root."
  value       = module.polykube.files
}

output "roster" {
  description = "The Federation and the ClusterMembers as one YAML stream."
  value       = module.polykube.roster
}
