# What the two cluster stacks would output. The addresses are documentation ranges
# (RFC 5737); replace them with your Netmaker gateways' public addresses.
eks = {
  cluster_name         = "aws-eu-central-1"
  region               = "eu-central-1"
  cluster_service_cidr = "172.20.0.0/16"
  pod_cidr             = "10.1.0.0/16"
  netmaker_endpoint    = "203.0.113.10:51821"
}

gke = {
  name               = "gcp-europe-west3"
  location           = "europe-west3"
  cluster_ipv4_cidr  = "10.2.0.0/16"
  services_ipv4_cidr = "10.3.0.0/20"
  netmaker_endpoint  = "198.51.100.20:51821"
}
