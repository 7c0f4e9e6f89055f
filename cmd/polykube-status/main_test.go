package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/polykube/polykube/internal/status"
)

// runMainEnv makes the test binary behave as polykube-status itself, so a test can run the CLI
// in a subprocess with the streams a shell would give it (see runMainProcess).
const runMainEnv = "POLYKUBE_STATUS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	// The CLI runs exec credential plugins through its own binary, which is this one in tests.
	if os.Getenv(runMainEnv) == "1" || status.ExecShimRequested() {
		main()
		return
	}
	// envtest logs through controller-runtime; go test shows it only for failing tests or -v.
	ctrllog.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	os.Exit(m.Run())
}
