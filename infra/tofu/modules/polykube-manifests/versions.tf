terraform {
  # Tested with OpenTofu 1.12.6 (the version the hermetic toolchain builds). The module uses
  # cross-variable references in validation blocks, which need a recent OpenTofu.
  required_version = ">= 1.12.0"

  # No providers: everything is rendered with built-in functions (templatefile, jsonencode,
  # cidr*), so `tofu init` downloads nothing.
}
