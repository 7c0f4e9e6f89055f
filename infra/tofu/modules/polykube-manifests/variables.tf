variable "federation" {
  description = <<-EOT
    The federation the clusters form. name is the Federation object's name; max_connected_clusters
    is Cilium's clustermesh.maxConnectedClusters (255 or 511) and bounds the cluster IDs.
  EOT
  type = object({
    name                   = string
    max_connected_clusters = optional(number, 255)
  })

  validation {
    condition     = length(var.federation.name) <= 253 && can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", var.federation.name))
    error_message = "federation.name = ${jsonencode(var.federation.name)} is not a valid object name: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters (for example \"production\")."
  }

  validation {
    condition     = contains([255, 511], var.federation.max_connected_clusters)
    error_message = "federation.max_connected_clusters = ${var.federation.max_connected_clusters} is not supported: Cilium ClusterMesh allows 255 (the default) or 511."
  }
}

variable "clusters" {
  description = <<-EOT
    The member clusters, keyed by cluster name (the ClusterMember's name and Cilium's cluster.name).
    Feed them from your cluster stacks' outputs (EKS, GKE, ...). Attributes:
      provider      aws, gcp, azure, onprem, kind, k0s, kwok or other
      region, zone  the provider's region and zone (optional)
      cluster_id    Cilium's cluster.id, unique in the federation, 1..max_connected_clusters
      pod_cidrs     the cluster's pod networks (1-8 CIDRs); must not overlap another cluster's
      service_cidr  the cluster's service network (optional)
      labels        free-form facts about the cluster (optional, at most 64)
      overlay       { type = "none" | "netmaker", endpoint = "host:port" }; netmaker needs endpoint
  EOT
  type = map(object({
    provider     = string
    region       = optional(string, "")
    zone         = optional(string, "")
    cluster_id   = number
    pod_cidrs    = list(string)
    service_cidr = optional(string, "")
    labels       = optional(map(string), {})
    overlay = optional(object({
      type     = optional(string, "none")
      endpoint = optional(string, "")
    }), {})
  }))

  validation {
    condition     = length(var.clusters) > 0
    error_message = "clusters is empty: give at least one cluster."
  }

  validation {
    condition     = alltrue([for name, c in var.clusters : length(name) <= 32 && can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", name))])
    error_message = "clusters: invalid cluster name(s) ${jsonencode([for name, c in var.clusters : name if !(length(name) <= 32 && can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", name)))])}. A cluster name must be a DNS label of at most 32 characters (Cilium ClusterMesh limit): lowercase letters, digits and '-', starting and ending with a letter or digit, for example \"aws-eu-central-1\"."
  }

  validation {
    condition     = alltrue([for c in values(var.clusters) : contains(["aws", "gcp", "azure", "onprem", "kind", "k0s", "kwok", "other"], c.provider)])
    error_message = "clusters: unknown provider in ${join(", ", [for name, c in var.clusters : "clusters[\"${name}\"].provider = ${jsonencode(c.provider)}" if !contains(["aws", "gcp", "azure", "onprem", "kind", "k0s", "kwok", "other"], c.provider)])}. Use one of aws, gcp, azure, onprem, kind, k0s, kwok, other."
  }

  validation {
    condition     = alltrue([for c in values(var.clusters) : c.cluster_id >= 1 && c.cluster_id <= var.federation.max_connected_clusters && floor(c.cluster_id) == c.cluster_id])
    error_message = "clusters: cluster ID out of range in ${join(", ", [for name, c in var.clusters : "clusters[\"${name}\"].cluster_id = ${c.cluster_id}" if !(c.cluster_id >= 1 && c.cluster_id <= var.federation.max_connected_clusters && floor(c.cluster_id) == c.cluster_id)])}. With federation.max_connected_clusters = ${var.federation.max_connected_clusters} a cluster ID must be a whole number from 1 to ${var.federation.max_connected_clusters}${var.federation.max_connected_clusters == 255 ? " (set federation.max_connected_clusters = 511 to allow IDs up to 511)" : ""}."
  }

  validation {
    condition     = length(distinct([for c in values(var.clusters) : c.cluster_id])) == length(var.clusters)
    error_message = "clusters: cluster IDs must be unique in the federation (Cilium ClusterMesh tells clusters apart by ID): ${join("; ", [for id, names in { for name, c in var.clusters : tostring(c.cluster_id) => name... } : "cluster_id ${id} is used by ${join(", ", names)}" if length(names) > 1])}. Give each cluster its own ID."
  }

  validation {
    condition     = alltrue([for c in values(var.clusters) : length(c.pod_cidrs) >= 1 && length(c.pod_cidrs) <= 8 && alltrue([for cidr in c.pod_cidrs : can(cidrhost(cidr, 0))])])
    error_message = "clusters: invalid pod_cidrs in ${join(", ", [for name, c in var.clusters : "clusters[\"${name}\"].pod_cidrs = ${jsonencode(c.pod_cidrs)}" if !(length(c.pod_cidrs) >= 1 && length(c.pod_cidrs) <= 8 && alltrue([for cidr in c.pod_cidrs : can(cidrhost(cidr, 0))]))])}. Give 1 to 8 CIDRs such as \"10.1.0.0/16\"."
  }

  validation {
    # Two CIDRs overlap when either contains the other's first address; try() leaves invalid
    # CIDRs (reported by the validation above) and IPv4/IPv6 pairs out. A validation may refer
    # only to its own variable, hence the list of (cluster, CIDR) spelled out twice.
    condition = alltrue(flatten([
      for i, a in flatten([for name, c in var.clusters : [for cidr in c.pod_cidrs : cidr]]) : [
        for j, b in flatten([for name, c in var.clusters : [for cidr in c.pod_cidrs : cidr]]) :
        j <= i || !try(cidrcontains(a, cidrhost(b, 0)) || cidrcontains(b, cidrhost(a, 0)), false)
      ]
    ]))
    error_message = format(
      "clusters: pod CIDRs overlap: %s. Cilium ClusterMesh routes pod traffic by CIDR, so every cluster needs pod CIDRs that overlap no other cluster's (nor each other).",
      join("; ", flatten([
        for i, a in flatten([for name, c in var.clusters : [for cidr in c.pod_cidrs : { cluster = name, cidr = cidr }]]) : [
          for j, b in flatten([for name, c in var.clusters : [for cidr in c.pod_cidrs : { cluster = name, cidr = cidr }]]) :
          "${a.cluster} ${a.cidr} overlaps ${b.cluster} ${b.cidr}"
          if j > i && try(cidrcontains(a.cidr, cidrhost(b.cidr, 0)) || cidrcontains(b.cidr, cidrhost(a.cidr, 0)), false)
        ]
      ]))
    )
  }

  validation {
    condition     = alltrue([for c in values(var.clusters) : c.service_cidr == "" || can(cidrhost(c.service_cidr, 0))])
    error_message = "clusters: invalid service_cidr in ${join(", ", [for name, c in var.clusters : "clusters[\"${name}\"].service_cidr = ${jsonencode(c.service_cidr)}" if !(c.service_cidr == "" || can(cidrhost(c.service_cidr, 0)))])}. Give a CIDR such as \"172.20.0.0/16\", or leave it out."
  }

  validation {
    condition     = alltrue([for c in values(var.clusters) : length(c.region) <= 63 && length(c.zone) <= 63 && length(c.labels) <= 64])
    error_message = "clusters: ${join(", ", [for name, c in var.clusters : name if !(length(c.region) <= 63 && length(c.zone) <= 63 && length(c.labels) <= 64)])}: region and zone must be at most 63 characters and labels at most 64 entries."
  }

  validation {
    condition     = alltrue([for c in values(var.clusters) : contains(["none", "netmaker"], c.overlay.type)])
    error_message = "clusters: unknown overlay type in ${join(", ", [for name, c in var.clusters : "clusters[\"${name}\"].overlay.type = ${jsonencode(c.overlay.type)}" if !contains(["none", "netmaker"], c.overlay.type)])}. Use \"none\" (the clusters share a routable network) or \"netmaker\" (WireGuard overlay)."
  }

  validation {
    condition     = alltrue([for c in values(var.clusters) : c.overlay.type != "netmaker" || c.overlay.endpoint != ""])
    error_message = "clusters: overlay.type is \"netmaker\" but overlay.endpoint is empty for ${join(", ", [for name, c in var.clusters : name if c.overlay.type == "netmaker" && c.overlay.endpoint == ""])}. Set overlay.endpoint to the public host:port of the cluster's Netmaker endpoint (for example \"203.0.113.10:51821\"), or use overlay.type = \"none\" if the clusters share a network."
  }

  validation {
    condition     = alltrue([for c in values(var.clusters) : c.overlay.endpoint == "" || (length(c.overlay.endpoint) <= 253 && can(regex("^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):[0-9]{1,5}$", c.overlay.endpoint)))])
    error_message = "clusters: invalid overlay.endpoint in ${join(", ", [for name, c in var.clusters : "clusters[\"${name}\"].overlay.endpoint = ${jsonencode(c.overlay.endpoint)}" if !(c.overlay.endpoint == "" || (length(c.overlay.endpoint) <= 253 && can(regex("^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):[0-9]{1,5}$", c.overlay.endpoint))))])}. Use host:port, for example \"203.0.113.10:51821\", \"wg.example.com:51821\" or \"[2001:db8::1]:51821\"."
  }
}

variable "flux" {
  description = <<-EOT
    The Flux Kustomization rendered for each cluster (its GitOps entry point): its name and
    namespace, the Flux source it reads (kind and name, usually the GitRepository that
    `flux bootstrap` created), the reconcile interval and whether Flux prunes objects removed
    from Git.
  EOT
  type = object({
    name        = optional(string, "polykube")
    namespace   = optional(string, "flux-system")
    source_kind = optional(string, "GitRepository")
    source_name = optional(string, "flux-system")
    interval    = optional(string, "10m")
    prune       = optional(bool, true)
  })
  default  = {}
  nullable = false

  validation {
    condition = alltrue([
      for v in [var.flux.name, var.flux.namespace, var.flux.source_name] :
      length(v) <= 63 && can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", v))
    ])
    error_message = "flux.name, flux.namespace and flux.source_name must be DNS labels (lowercase letters, digits and '-', at most 63 characters); got ${jsonencode([var.flux.name, var.flux.namespace, var.flux.source_name])}."
  }

  validation {
    condition     = contains(["GitRepository", "OCIRepository", "Bucket"], var.flux.source_kind)
    error_message = "flux.source_kind = ${jsonencode(var.flux.source_kind)} is not a Flux source kind: use GitRepository, OCIRepository or Bucket."
  }

  validation {
    condition     = can(regex("^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$", var.flux.interval))
    error_message = "flux.interval = ${jsonencode(var.flux.interval)} is not a duration: use a Go duration such as \"10m\" or \"1h\"."
  }
}

variable "layout" {
  description = <<-EOT
    Where the rendered files go in the GitOps repository, relative to its root:
      federation_dir  the roster: Federation, one ClusterMember per cluster, a kustomization.yaml
      clusters_dir    clusters/<name>/kustomization.yaml, the path each cluster's Flux Kustomization reads
      flux_dir        flux/<name>/<flux.name>.yaml, each cluster's Flux Kustomization
                      (point `flux bootstrap --path` at flux/<name>, or kubectl apply it)
  EOT
  type = object({
    federation_dir = optional(string, "federation")
    clusters_dir   = optional(string, "clusters")
    flux_dir       = optional(string, "flux")
  })
  default  = {}
  nullable = false

  validation {
    condition = alltrue([
      for d in [var.layout.federation_dir, var.layout.clusters_dir, var.layout.flux_dir] :
      can(regex("^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", d)) && !contains(split("/", d), "..") && !contains(split("/", d), ".")
    ])
    error_message = "layout: directories must be relative paths inside the repository without '.' or '..' segments or a trailing '/', for example \"clusters\" or \"deploy/clusters\"; got ${jsonencode(var.layout)}."
  }

  validation {
    condition     = length(distinct([var.layout.federation_dir, var.layout.clusters_dir, var.layout.flux_dir])) == 3
    error_message = "layout: federation_dir, clusters_dir and flux_dir must differ; got ${jsonencode(var.layout)}."
  }
}

variable "cluster_resources" {
  description = <<-EOT
    More directories every clusters/<name>/kustomization.yaml includes besides the roster, relative
    to the repository root: the Polykube operator's manifests (their Deployment takes
    --cluster-name=$${CLUSTER_NAME}, filled by Flux's postBuild substitution) and your workloads,
    for example ["polykube/operator", "workloads/production"].
  EOT
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition = alltrue([
      for d in var.cluster_resources :
      can(regex("^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", d)) && !contains(split("/", d), "..") && !contains(split("/", d), ".")
    ])
    error_message = "cluster_resources: entries must be directories relative to the repository root without '.' or '..' segments, for example \"workloads/production\"; got ${jsonencode(var.cluster_resources)}."
  }
}

variable "operator" {
  description = <<-EOT
    Optional: deliver the Polykube operator from its Git repository with Flux. When set, each
    cluster's Flux entry point also holds a GitRepository "<flux.name>-operator" for url at tag and a Kustomization
    "<flux.name>-operator" for path (with CLUSTER_NAME substituted into the operator's
    --cluster-name), and the roster Kustomization waits for it (dependsOn), so the CRDs exist
    before any ClusterMember is applied. Leave null when the operator's manifests are already in
    your repository (list their directory in cluster_resources).
  EOT
  type = object({
    url      = string
    tag      = string
    path     = optional(string, "./gitops/operator")
    interval = optional(string, "1h")
  })
  default = null

  validation {
    condition     = var.operator == null || can(regex("^(https?|ssh)://", var.operator.url))
    error_message = "operator.url must be an http(s):// or ssh:// Git URL, for example \"https://github.com/polykube/polykube\"."
  }

  validation {
    condition     = var.operator == null || can(regex("^[A-Za-z0-9][-A-Za-z0-9._/]*$", var.operator.tag))
    error_message = "operator.tag must be a Git tag such as \"v0.1.0-alpha.1\"."
  }

  validation {
    condition     = var.operator == null || can(regex("^\\./[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", var.operator.path))
    error_message = "operator.path must be a path inside the Polykube repository starting with \"./\", for example \"./gitops/operator\"."
  }

  validation {
    condition     = var.operator == null || can(regex("^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$", var.operator.interval))
    error_message = "operator.interval must be a Go duration such as \"1h\"."
  }
}
