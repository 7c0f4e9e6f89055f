package testenv

import (
	"context"
	"errors"
)

// toolchainAssets is wired to the hermetic toolchain once it exists.
func toolchainAssets(ctx context.Context) (string, error) {
	return "", errors.New("KUBEBUILDER_ASSETS is not set: run `make test`, or `eval \"$(go run ./testbed/cmd/polykube-testbed tools env)\"` first")
}
