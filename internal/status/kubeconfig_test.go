package status

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigWith writes a kubeconfig holding one context per name (server https://<name>:6443).
func kubeconfigWith(t *testing.T, dir, file string, namespaces map[string]string, names ...string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for _, n := range names {
		cfg.Clusters[n] = &clientcmdapi.Cluster{Server: "https://" + n + ":6443"}
		cfg.AuthInfos[n] = &clientcmdapi.AuthInfo{Token: "t-" + n}
		cfg.Contexts[n] = &clientcmdapi.Context{Cluster: n, AuthInfo: n, Namespace: namespaces[n]}
	}
	p := filepath.Join(dir, file)
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func contextsOf(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Context)
	}
	return out
}

func TestResolveTargets(t *testing.T) {
	dir := t.TempDir()
	one := kubeconfigWith(t, dir, "one", nil, "gamma", "alpha")
	two := kubeconfigWith(t, dir, "two", nil, "beta")
	list := filepath.Join(dir, "fleet.txt")
	if err := os.WriteFile(list, []byte("# the fleet\nalpha\n\n  beta   # second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		env        string
		sel        ContextSelection
		want       []string
		usageError string
	}{
		{name: "explicit, in order", sel: ContextSelection{Kubeconfig: one, Contexts: []string{"gamma", "alpha", "gamma"}}, want: []string{"gamma", "alpha"}},
		{name: "all contexts, sorted", sel: ContextSelection{Kubeconfig: one, All: true}, want: []string{"alpha", "gamma"}},
		{name: "KUBECONFIG with several paths is merged", env: one + string(os.PathListSeparator) + two, sel: ContextSelection{All: true}, want: []string{"alpha", "beta", "gamma"}},
		{name: "contexts file with comments", env: one + string(os.PathListSeparator) + two, sel: ContextSelection{ContextsFile: list}, want: []string{"alpha", "beta"}},
		{name: "no contexts", sel: ContextSelection{Kubeconfig: one}, usageError: "no contexts to query: name them with --context"},
		{name: "unknown context", sel: ContextSelection{Kubeconfig: one, Contexts: []string{"alpha", "delta"}}, usageError: `unknown context "delta" in the kubeconfig (` + one + `); known contexts: alpha, gamma`},
		{name: "all and explicit", sel: ContextSelection{Kubeconfig: one, All: true, Contexts: []string{"alpha"}}, usageError: "cannot be combined"},
		{name: "empty contexts file", sel: ContextSelection{Kubeconfig: one, ContextsFile: empty}, usageError: "names no context"},
		{name: "missing contexts file", sel: ContextSelection{Kubeconfig: one, ContextsFile: filepath.Join(dir, "nope")}, usageError: "read --contexts-file"},
		{name: "missing kubeconfig", sel: ContextSelection{Kubeconfig: filepath.Join(dir, "nope"), All: true}, usageError: "load kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Setenv("KUBECONFIG", tt.env)
			ts, err := ResolveTargets(tt.sel)
			if tt.usageError != "" {
				g.Expect(IsUsage(err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.usageError))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(contextsOf(ts)).To(Equal(tt.want))
			for _, x := range ts {
				g.Expect(x.Config).NotTo(BeNil())
				g.Expect(x.Config.Host).To(Equal("https://" + x.Context + ":6443"))
				g.Expect(x.Server).To(Equal(x.Config.Host))
			}
		})
	}
}

func TestDefaultNamespace(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	kc := kubeconfigWith(t, dir, "kc", map[string]string{"a": "shop", "b": "shop", "c": "ops"}, "a", "b", "c", "d")

	ts, err := ResolveTargets(ContextSelection{Kubeconfig: kc, Contexts: []string{"a", "b"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(DefaultNamespace(ts)).To(Equal("shop"))

	ts, err = ResolveTargets(ContextSelection{Kubeconfig: kc, Contexts: []string{"d"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(DefaultNamespace(ts)).To(Equal("default"))

	ts, err = ResolveTargets(ContextSelection{Kubeconfig: kc, All: true})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = DefaultNamespace(ts)
	g.Expect(IsUsage(err)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("default (d), ops (c), shop (a, b); pass --namespace NAME or --all-namespaces"))
}
