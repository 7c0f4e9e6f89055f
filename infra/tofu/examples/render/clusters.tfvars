federation = {
  name = "production"
}

clusters = {
  "aws-eu-central-1" = {
    provider     = "aws"
    region       = "eu-central-1"
    cluster_id   = 1
    pod_cidrs    = ["10.1.0.0/16"]
    service_cidr = "172.20.0.0/16"
  }
  "gcp-europe-west3" = {
    provider     = "gcp"
    region       = "europe-west3"
    cluster_id   = 2
    pod_cidrs    = ["10.2.0.0/16"]
    service_cidr = "10.3.0.0/20"
  }
}

cluster_resources = ["workloads/production"]
