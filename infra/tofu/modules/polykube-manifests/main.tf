locals {
  # Cluster names in a stable order (map keys are sorted), so the rendered roster is too.
  cluster_names = sort(keys(var.clusters))

  header = <<-EOT
    # Rendered by the Polykube OpenTofu module polykube-manifests.
    # Change the module's inputs and render again rather than editing this file.
  EOT

  cluster_members = {
    for name in local.cluster_names : name => templatefile("${path.module}/templates/clustermember.yaml.tftpl", {
      header  = local.header
      name    = name
      cluster = var.clusters[name]
    })
  }

  federation = templatefile("${path.module}/templates/federation.yaml.tftpl", {
    header     = local.header
    federation = var.federation
    members    = local.cluster_names
  })

  federation_files = merge(
    { for name in local.cluster_names : "${var.layout.federation_dir}/members/${name}.yaml" => local.cluster_members[name] },
    { "${var.layout.federation_dir}/federation.yaml" = local.federation },
  )

  federation_kustomization = templatefile("${path.module}/templates/kustomization.yaml.tftpl", {
    header    = local.header
    resources = concat(["federation.yaml"], [for name in local.cluster_names : "members/${name}.yaml"])
  })

  # clusters/<name>/kustomization.yaml reaches the repository root through one ".." per
  # path segment of clusters_dir plus one for <name>.
  to_root = join("/", [for _ in split("/", var.layout.clusters_dir) : ".."])

  cluster_kustomizations = {
    for name in local.cluster_names : name => templatefile("${path.module}/templates/kustomization.yaml.tftpl", {
      header    = local.header
      resources = [for d in concat([var.layout.federation_dir], var.cluster_resources) : "${local.to_root}/../${d}"]
    })
  }

  flux_kustomizations = {
    for name in local.cluster_names : name => templatefile("${path.module}/templates/flux-kustomization.yaml.tftpl", {
      header   = local.header
      name     = name
      flux     = var.flux
      operator = var.operator
      path     = "./${var.layout.clusters_dir}/${name}"
    })
  }

  files = merge(
    local.federation_files,
    { "${var.layout.federation_dir}/kustomization.yaml" = local.federation_kustomization },
    { for name in local.cluster_names : "${var.layout.clusters_dir}/${name}/kustomization.yaml" => local.cluster_kustomizations[name] },
    { for name in local.cluster_names : "${var.layout.flux_dir}/${name}/${var.flux.name}.yaml" => local.flux_kustomizations[name] },
  )
}
