package harness

import "testing"

// The backends Cilium 1.20 programs for a global Service (its ClusterMesh backend selection):
// local affinity drops the peers' while a local one is ready; the first kind run with the
// earlier expectation (all of them) waited on 6 backends where Cilium held beta's 2.
func TestMeshBackends(t *testing.T) {
	for _, tc := range []struct {
		local, remote int
		affinity      string
		want          int
	}{
		{2, 4, "", 6},
		{2, 4, "none", 6},
		{2, 4, "local", 2},
		{0, 4, "local", 4},
		{2, 4, "remote", 4},
		{2, 0, "remote", 2},
		{0, 0, "local", 0},
	} {
		if got := meshBackends(tc.local, tc.remote, tc.affinity); got != tc.want {
			t.Errorf("meshBackends(%d, %d, %q) = %d, want %d", tc.local, tc.remote, tc.affinity, got, tc.want)
		}
	}
}
