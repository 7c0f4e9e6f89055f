package examplestest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/internal/toolchain"
)

const (
	moduleDir     = "infra/tofu/modules/polykube-manifests"
	awsGCPTofuDir = "examples/aws-gcp/tofu"
	awsGCPGitOps  = "examples/aws-gcp/gitops"
)

var (
	tofuOnce sync.Once
	tofuPath string
	tofuErr  error
)

// tofuBinary resolves the pinned tofu through the hermetic toolchain, building it from Go
// module source when it is not cached yet (minutes, once).
func tofuBinary(t *testing.T) string {
	t.Helper()
	tofuOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		tc, err := toolchain.New(toolchain.Options{Build: true, Log: os.Stderr})
		if err != nil {
			tofuErr = err
			return
		}
		r, err := tc.Resolve(ctx, toolchain.Tofu)
		tofuPath, tofuErr = r.Path, err
	})
	if tofuErr != nil {
		t.Fatalf("OpenTofu %s is needed to render %s: %v\n(build it with `go run ./testbed/cmd/polykube-testbed tools --build tofu`, or point POLYKUBE_TOFU_BINARY at one)",
			toolchain.TofuVersion, moduleDir, tofuErr)
	}
	return tofuPath
}

// tofu runs the tofu binary in one working directory with no user configuration.
type tofu struct {
	bin, dir string
	env      []string
}

// newWorkspace copies the given repository directories (their OpenTofu files, without tests and
// state) into a temporary root at the same relative paths, so relative module sources still
// resolve, and returns a tofu that works in dir (relative to that root).
func newWorkspace(t *testing.T, dir string, copyDirs ...string) tofu {
	t.Helper()
	return newWorkspaceWith(t, false, dir, copyDirs...)
}

// newWorkspaceWith is newWorkspace, copying the modules' tests/ directories too when withTests.
func newWorkspaceWith(t *testing.T, withTests bool, dir string, copyDirs ...string) tofu {
	t.Helper()
	root := t.TempDir()
	for _, d := range copyDirs {
		copyTofuFiles(t, filepath.Join(testenv.RepoRoot(), d), filepath.Join(root, d), withTests)
	}
	cliConfig := filepath.Join(root, ".tofurc")
	if err := os.WriteFile(cliConfig, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return tofu{
		bin: tofuBinary(t),
		dir: filepath.Join(root, dir),
		env: append(os.Environ(),
			"TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1",
			"TF_CLI_CONFIG_FILE="+cliConfig, "TF_PLUGIN_CACHE_DIR=", "TF_DATA_DIR=.terraform"),
	}
}

func copyTofuFiles(t *testing.T, src, dst string, withTests bool) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if (d.Name() == "tests" && !withTests) || d.Name() == ".terraform" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, r), 0o755)
		}
		if strings.Contains(d.Name(), ".tfstate") || d.Name() == ".terraform.lock.hcl" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, r), data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// run runs tofu with args and returns its stdout; the error carries the command and stderr.
func (tf tofu) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, tf.bin, args...)
	cmd.Dir = tf.dir
	cmd.Env = tf.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("tofu %s (in %s): %w\nstdout:\n%s\nstderr:\n%s",
			strings.Join(args, " "), tf.dir, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// writeVars writes OpenTofu variables as a .tfvars.json file in the workspace.
func (tf tofu) writeVars(t *testing.T, vars map[string]any) string {
	t.Helper()
	data, err := json.MarshalIndent(vars, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(tf.dir, "vars-*.tfvars.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// rendered is what the module's outputs hold.
type rendered struct {
	Files  map[string]string
	Roster string
}

// render runs init, apply and output in the workspace and returns the files and roster.
func (tf tofu) render(ctx context.Context, varFiles ...string) (rendered, error) {
	if _, err := tf.run(ctx, "init", "-input=false", "-no-color"); err != nil {
		return rendered{}, err
	}
	args := []string{"apply", "-auto-approve", "-input=false", "-no-color"}
	for _, f := range varFiles {
		args = append(args, "-var-file="+f)
	}
	if _, err := tf.run(ctx, args...); err != nil {
		return rendered{}, err
	}
	out, err := tf.run(ctx, "output", "-json", "-no-color")
	if err != nil {
		return rendered{}, err
	}
	var outputs struct {
		Files  struct{ Value map[string]string }
		Roster struct{ Value string }
	}
	if err := json.Unmarshal([]byte(out), &outputs); err != nil {
		return rendered{}, fmt.Errorf("tofu output -json: %w\n%s", err, out)
	}
	return rendered{Files: outputs.Files.Value, Roster: outputs.Roster.Value}, nil
}

// dryRunRendered sends every API object of the rendered files to the API server.
func dryRunRendered(ctx context.Context, g Gomega, r rendered) int {
	paths := make([]string, 0, len(r.Files))
	for p := range r.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var n int
	for _, p := range paths {
		docs, err := splitDocs(p, []byte(r.Files[p]))
		g.Expect(err).NotTo(HaveOccurred())
		for _, d := range docs {
			if configReason(d) != "" {
				continue
			}
			g.Expect(dryRun(ctx, d)).To(Succeed())
			n++
		}
	}
	return n
}

// TestTofuExample_AWSGCPIsRenderedAndAccepted renders examples/aws-gcp/tofu exactly as a user
// would, checks that examples/aws-gcp/gitops holds exactly what it renders, and sends the
// rendered objects to the API server.
func TestTofuExample_AWSGCPIsRenderedAndAccepted(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	tf := newWorkspace(t, awsGCPTofuDir, moduleDir, awsGCPTofuDir)
	r, err := tf.render(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Files).NotTo(BeEmpty())

	for p, content := range r.Files {
		committed, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), awsGCPGitOps, p))
		g.Expect(err).NotTo(HaveOccurred(), "%s/%s is rendered but not committed; render it (see examples/aws-gcp/README.md)", awsGCPGitOps, p)
		g.Expect(string(committed)).To(Equal(content), "%s/%s differs from what %s renders; render it again (see examples/aws-gcp/README.md)", awsGCPGitOps, p, awsGCPTofuDir)
	}
	g.Expect(dryRunRendered(ctx, g, r)).To(BeNumerically(">=", 5), "objects sent to the API server")

	roster, err := splitDocs("roster", []byte(r.Roster))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(roster).To(HaveLen(3), "the Federation and two ClusterMembers")
	for _, d := range roster {
		g.Expect(dryRun(ctx, d)).To(Succeed())
	}
}

// TestTofuModule_TofuTestPasses runs the module's own `tofu test` suite (render and
// validation runs), so `go test ./...` covers it too.
func TestTofuModule_TofuTestPasses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tf := newWorkspaceWith(t, true, moduleDir, moduleDir)
	if _, err := tf.run(ctx, "init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	out, err := tf.run(ctx, "test", "-no-color")
	if err != nil {
		t.Fatalf("tofu test of %s failed (reproduce: cd %s && tofu test):\n%v", moduleDir, moduleDir, err)
	}
	if !strings.Contains(out, "Success!") || strings.Contains(out, " 0 passed") {
		t.Fatalf("tofu test ran no passing run:\n%s", out)
	}
	t.Log(strings.TrimSpace(out[strings.LastIndex(out, "Success!"):]))
}

// crdEnum returns the enum of a field of a Polykube CRD's schema, read from the generated CRD.
func crdEnum(t *testing.T, plural string, path ...string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.CRDDir(), "polykube.kismet.io_"+plural+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("%s CRD: %v", plural, err)
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, p := range path {
		next, ok := s.Properties[p]
		if !ok {
			t.Fatalf("%s CRD has no field %s", plural, strings.Join(path, "."))
		}
		s = &next
	}
	var values []string
	for _, v := range s.Enum {
		var str string
		if err := json.Unmarshal(v.Raw, &str); err != nil {
			str = string(v.Raw)
		}
		values = append(values, str)
	}
	if len(values) == 0 {
		t.Fatalf("%s CRD: %s has no enum", plural, strings.Join(path, "."))
	}
	return values
}

// TestTofuModule_AcceptsWhatTheCRDsAccept renders one cluster per provider the ClusterMember
// CRD allows, alternating overlay types, with the largest cluster ID, and sends the roster to
// the API server: a provider or overlay added to the API but not to the module fails here.
func TestTofuModule_AcceptsWhatTheCRDsAccept(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	providers := crdEnum(t, "clustermembers", "spec", "provider")
	overlays := crdEnum(t, "clustermembers", "spec", "network", "type")
	maxClusters := crdEnum(t, "federations", "spec", "mesh", "maxConnectedClusters")
	g.Expect(maxClusters).To(ConsistOf("255", "511"), "the module's federation.max_connected_clusters validation allows 255 and 511")

	clusters := map[string]any{}
	for i, p := range providers {
		overlay := map[string]any{"type": overlays[i%len(overlays)]}
		if overlay["type"] == "netmaker" {
			overlay["endpoint"] = fmt.Sprintf("203.0.113.%d:51821", i+1)
		}
		id := i + 1
		if i == len(providers)-1 {
			id = 511
		}
		clusters["cluster-"+p] = map[string]any{
			"provider":     p,
			"region":       "region-" + p,
			"zone":         "zone-" + p,
			"cluster_id":   id,
			"pod_cidrs":    []string{fmt.Sprintf("10.%d.0.0/16", i+1), fmt.Sprintf("fd00:%x::/104", i+1)},
			"service_cidr": fmt.Sprintf("172.%d.0.0/16", 16+i),
			"labels":       map[string]string{"provider": p, "yes": "no", "number": "1"},
			"overlay":      overlay,
		}
	}
	tf := newWorkspace(t, moduleDir, moduleDir)
	r, err := tf.render(ctx, tf.writeVars(t, map[string]any{
		"federation": map[string]any{"name": "every-provider", "max_connected_clusters": 511},
		"clusters":   clusters,
	}))
	g.Expect(err).NotTo(HaveOccurred())
	roster, err := splitDocs("roster", []byte(r.Roster))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(roster).To(HaveLen(len(providers) + 1))
	for _, d := range roster {
		g.Expect(dryRun(ctx, d)).To(Succeed())
	}
	g.Expect(dryRunRendered(ctx, g, r)).To(Equal(2*len(providers)+1), "ClusterMembers, Flux Kustomizations and the Federation")
}

// TestTofuModule_TestdataIsAccepted sends the expected files of the module's own tofu tests
// (which `tofu test` proves the module renders byte for byte) to the API server.
func TestTofuModule_TestdataIsAccepted(t *testing.T) {
	testdata := filepath.Join(testenv.RepoRoot(), moduleDir, "tests", "testdata")
	var n int
	err := filepath.WalkDir(testdata, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isYAML(path) {
			return err
		}
		t.Run(rel(path), func(t *testing.T) {
			g := NewWithT(t)
			docs, err := readDocs(path)
			g.Expect(err).NotTo(HaveOccurred())
			for _, doc := range docs {
				if configReason(doc) != "" {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				g.Expect(dryRun(ctx, doc)).To(Succeed())
				cancel()
				n++
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no API objects under %s", testdata)
	}
}

// TestTofuModule_InvalidInputsSayWhatIsWrong checks the error each invalid input produces: what
// is wrong, and what is allowed.
func TestTofuModule_InvalidInputsSayWhatIsWrong(t *testing.T) {
	cluster := func(id any, cidrs ...string) map[string]any {
		return map[string]any{"provider": "aws", "cluster_id": id, "pod_cidrs": cidrs}
	}
	with := func(c map[string]any, k string, v any) map[string]any {
		c[k] = v
		return c
	}
	prod := map[string]any{"name": "production"}
	cases := []struct {
		name       string
		federation map[string]any
		clusters   map[string]any
		want       []string
	}{
		{
			name:     "duplicate cluster IDs",
			clusters: map[string]any{"a": cluster(7, "10.1.0.0/16"), "b": cluster(7, "10.2.0.0/16")},
			want:     []string{"cluster IDs must be unique", "cluster_id 7 is used by a, b"},
		},
		{
			name:     "cluster ID above 255",
			clusters: map[string]any{"a": cluster(256, "10.1.0.0/16")},
			want:     []string{`clusters["a"].cluster_id = 256`, "from 1 to 255", "max_connected_clusters = 511"},
		},
		{
			name:       "cluster ID above 511",
			federation: map[string]any{"name": "production", "max_connected_clusters": 511},
			clusters:   map[string]any{"a": cluster(600, "10.1.0.0/16")},
			want:       []string{`clusters["a"].cluster_id = 600`, "from 1 to 511"},
		},
		{
			name:     "cluster ID zero",
			clusters: map[string]any{"a": cluster(0, "10.1.0.0/16")},
			want:     []string{`clusters["a"].cluster_id = 0`, "from 1 to 255"},
		},
		{
			name:       "unsupported max_connected_clusters",
			federation: map[string]any{"name": "production", "max_connected_clusters": 1023},
			clusters:   map[string]any{"a": cluster(1, "10.1.0.0/16")},
			want:       []string{"federation.max_connected_clusters = 1023", "255 (the default) or 511"},
		},
		{
			name:     "overlapping pod CIDRs",
			clusters: map[string]any{"a": cluster(1, "10.0.0.0/8"), "b": cluster(2, "10.2.0.0/16")},
			want:     []string{"pod CIDRs overlap", "a 10.0.0.0/8 overlaps b 10.2.0.0/16"},
		},
		{
			name:     "pod CIDR not a CIDR",
			clusters: map[string]any{"a": cluster(1, "10.1.0.0")},
			want:     []string{`clusters["a"].pod_cidrs = ["10.1.0.0"]`, "1 to 8 CIDRs"},
		},
		{
			name:     "name longer than 32",
			clusters: map[string]any{"aws-eu-central-1-production-blue-1": cluster(1, "10.1.0.0/16")},
			want:     []string{`"aws-eu-central-1-production-blue-1"`, "DNS label of at most 32 characters"},
		},
		{
			name:     "name not a DNS label",
			clusters: map[string]any{"AWS_eu": cluster(1, "10.1.0.0/16")},
			want:     []string{`"AWS_eu"`, "lowercase letters, digits and '-'"},
		},
		{
			name:     "unknown provider",
			clusters: map[string]any{"a": with(cluster(1, "10.1.0.0/16"), "provider", "digitalocean")},
			want:     []string{`clusters["a"].provider = "digitalocean"`, "aws, gcp, azure, onprem, kind, k0s, kwok, other"},
		},
		{
			name:     "netmaker without endpoint",
			clusters: map[string]any{"a": with(cluster(1, "10.1.0.0/16"), "overlay", map[string]any{"type": "netmaker"})},
			want:     []string{`overlay.type is "netmaker" but overlay.endpoint is empty for a`, "host:port"},
		},
		{
			name:     "unknown overlay",
			clusters: map[string]any{"a": with(cluster(1, "10.1.0.0/16"), "overlay", map[string]any{"type": "tailscale"})},
			want:     []string{`clusters["a"].overlay.type = "tailscale"`, `"none"`, `"netmaker"`},
		},
	}

	tf := newWorkspace(t, moduleDir, moduleDir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := tf.run(ctx, "init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			fed := tc.federation
			if fed == nil {
				fed = prod
			}
			varFile := tf.writeVars(t, map[string]any{"federation": fed, "clusters": tc.clusters})
			out, err := tf.run(ctx, "plan", "-json", "-input=false", "-var-file="+varFile)
			g.Expect(err).To(HaveOccurred(), "tofu plan must refuse %s", tc.name)
			errs := planErrors(out)
			g.Expect(errs).To(HaveLen(1), "exactly one validation fails")
			for _, w := range tc.want {
				g.Expect(errs[0]).To(ContainSubstring(w))
			}
		})
	}
}

// planErrors returns "summary: detail" of every error diagnostic in `tofu plan -json` output.
func planErrors(out string) []string {
	var errs []string
	for _, line := range strings.Split(out, "\n") {
		var msg struct {
			Diagnostic *struct{ Severity, Summary, Detail string }
		}
		if json.Unmarshal([]byte(line), &msg) != nil || msg.Diagnostic == nil || msg.Diagnostic.Severity != "error" {
			continue
		}
		errs = append(errs, msg.Diagnostic.Summary+": "+msg.Diagnostic.Detail)
	}
	return errs
}
