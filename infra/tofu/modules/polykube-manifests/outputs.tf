output "cluster_members" {
  description = "One ClusterMember manifest (YAML) per cluster, keyed by cluster name."
  value       = local.cluster_members
}

output "federation" {
  description = "The Federation manifest (YAML) listing every cluster."
  value       = local.federation
}

output "roster" {
  description = "The Federation and every ClusterMember as one multi-document YAML stream, ready for `kubectl apply -f -`."
  value       = join("---\n", concat([local.federation], [for name in local.cluster_names : local.cluster_members[name]]))
}

output "cluster_kustomizations" {
  description = "Each cluster's kustomization.yaml (the directory its Flux Kustomization reads), keyed by cluster name."
  value       = local.cluster_kustomizations
}

output "flux_kustomizations" {
  description = "Each cluster's GitOps entry point, a Flux Kustomization that reads clusters/<name> and substitutes CLUSTER_NAME, keyed by cluster name."
  value       = local.flux_kustomizations
}

output "files" {
  description = "Every rendered file, keyed by its path relative to the GitOps repository root."
  value       = local.files
}
