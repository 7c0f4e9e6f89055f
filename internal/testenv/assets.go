package testenv

import (
	"context"
	"fmt"

	"github.com/polykube/polykube/internal/toolchain"
)

// toolchainAssets resolves kube-apiserver and etcd from the hermetic toolchain, building them
// from module source on a cold cache (slow: `make tools` shows the progress of that build).
func toolchainAssets(ctx context.Context) (string, error) {
	dir, err := toolchain.EnvtestAssets(ctx)
	if err != nil {
		return "", fmt.Errorf("find kube-apiserver and etcd for the test API server: %w (run `make tools`, or set KUBEBUILDER_ASSETS)", err)
	}
	return dir, nil
}
