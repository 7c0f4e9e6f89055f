# Renders the Polykube manifests and writes them into a GitOps repository checkout.
#
#   tofu init
#   tofu apply -var-file=clusters.tfvars -var output_dir=../../../../my-gitops-repo
#
# Review the diff in that checkout and commit it. This root module needs the hashicorp/local
# provider to write files; the polykube-manifests module itself needs no provider (see its
# README for rendering with `tofu output` alone).

terraform {
  required_version = ">= 1.12.0"
  required_providers {
    local = {
      source  = "hashicorp/local"
      version = "~> 2.5"
    }
  }
}

variable "output_dir" {
  description = "The GitOps repository checkout to write the rendered files into."
  type        = string
}

variable "federation" {
  description = "See the polykube-manifests module."
  type        = any
}

variable "clusters" {
  description = "See the polykube-manifests module."
  type        = any
}

variable "flux" {
  description = "See the polykube-manifests module."
  type        = any
  default     = null
}

variable "layout" {
  description = "See the polykube-manifests module."
  type        = any
  default     = null
}

variable "cluster_resources" {
  description = "See the polykube-manifests module."
  type        = any
  default     = null
}

variable "operator" {
  description = "See the polykube-manifests module."
  type        = any
  default     = null
}

module "polykube" {
  source = "../../modules/polykube-manifests"

  federation        = var.federation
  clusters          = var.clusters
  flux              = var.flux
  layout            = var.layout
  cluster_resources = var.cluster_resources
  operator          = var.operator
}

resource "local_file" "manifest" {
  for_each = module.polykube.files

  filename        = "${var.output_dir}/${each.key}"
  content         = each.value
  file_permission = "0644"
}

output "files" {
  description = "The paths written, relative to output_dir."
  value       = sort(keys(module.polykube.files))
}
