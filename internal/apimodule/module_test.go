package apimodule_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polykube/polykube/internal/testenv"
)

// apiMachinery are the only modules the api module may require directly.
var apiMachinery = []string{"k8s.io/api", "k8s.io/apimachinery"}

// TestAPIModule_DependsOnlyOnAPIMachinery keeps the api module importable without the operator
// or the test bed: its direct requirements are k8s.io/api and k8s.io/apimachinery only, and every
// package its packages import comes from the standard library, the api module itself, or a module
// those two bring in themselves. (Indirect requirements that tidy records for the tests of
// dependencies, such as github.com/kr/text, are not imported by the api's packages.)
func TestAPIModule_DependsOnlyOnAPIMachinery(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "api")

	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := json.Unmarshal(goCmd(t, dir, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatalf("decode api/go.mod: %v", err)
	}
	for _, r := range mod.Require {
		if !r.Indirect && !slices.Contains(apiMachinery, r.Path) {
			t.Errorf("api/go.mod requires %s directly; the API module must import only Kubernetes' API machinery (%s)", r.Path, strings.Join(apiMachinery, ", "))
		}
	}

	allowed := reachable(t, dir)
	for _, line := range strings.Fields(string(goCmd(t, dir, "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}{{end}}", "./..."))) {
		if line != "github.com/polykube/polykube/api" && !allowed[line] {
			t.Errorf("a package of the api module imports from module %s, which is not Kubernetes' API machinery", line)
		}
	}
}

// reachable is the set of modules k8s.io/api and k8s.io/apimachinery depend on (themselves
// included), from the api module's own module graph.
func reachable(t *testing.T, dir string) map[string]bool {
	t.Helper()
	edges := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(goCmd(t, dir, "mod", "graph"))), "\n") {
		from, to, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		from, _, _ = strings.Cut(from, "@")
		to, _, _ = strings.Cut(to, "@")
		edges[from] = append(edges[from], to)
	}
	seen := map[string]bool{}
	queue := slices.Clone(apiMachinery)
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		if seen[m] {
			continue
		}
		seen[m] = true
		queue = append(queue, edges[m]...)
	}
	return seen
}

func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return out
}
