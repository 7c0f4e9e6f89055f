package datapath

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Dockerfile copies only some directories into its build stage; every package of this
// module that the operator or the echo server imports must be in one of them, or
// `docker build` fails for users on a package added since (it once lacked placement/).
func TestDockerfile_CopiesEveryPackageTheImageBuilds(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var copied []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "COPY" || strings.HasPrefix(fields[1], "--") {
			continue
		}
		for _, src := range fields[1 : len(fields)-1] {
			copied = append(copied, strings.TrimSuffix(src, "/"))
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./operator", "./testbed/datapath/echo")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/polykube/polykube/"
	for _, pkg := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok {
			continue
		}
		found := false
		for _, c := range copied {
			if rel == c || strings.HasPrefix(rel, c+"/") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("the image builds %s, but the Dockerfile copies none of its directories (it copies %v): add `COPY %s/ %s/`", pkg, copied, strings.Split(rel, "/")[0], strings.Split(rel, "/")[0])
		}
	}
}
