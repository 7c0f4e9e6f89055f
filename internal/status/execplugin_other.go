//go:build !unix

package status

// Without process groups the plugin is left to client-go as it is (see execplugin.go).
const execShimSupported = false

func runExecShim(string, []string, []string, int) int { return 1 }
