package status

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// UsageError is a mistake in how the command was called; the CLI exits with ExitUsage.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// IsUsage reports whether err is a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// ContextSelection says which kubeconfig contexts to query.
type ContextSelection struct {
	// Kubeconfig is an explicit kubeconfig path (like kubectl --kubeconfig); empty means
	// $KUBECONFIG (several paths merged) or ~/.kube/config.
	Kubeconfig string
	// Contexts are named explicitly, in order.
	Contexts []string
	// ContextsFile holds one context per line; '#' starts a comment.
	ContextsFile string
	// All selects every context of the kubeconfig, sorted by name.
	All bool
}

// Target is one context to query.
type Target struct {
	Context string
	Server  string
	// Namespace is the context's namespace ("default" when it sets none).
	Namespace string
	// Config is the context's REST config; nil when ConfigErr is set.
	Config    *rest.Config
	ConfigErr error
	// execShim is the polykube-status binary that runs Config's exec credential plugin, when
	// GuardExecPlugins wrapped it.
	execShim string
}

// ReadContextsFile reads one context name per line; blank lines and '#' comments are skipped.
func ReadContextsFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Usagef("read --contexts-file: %v", err)
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, Usagef("read --contexts-file %s: %v", path, err)
	}
	return out, nil
}

// ResolveTargets loads the kubeconfig with kubectl's loading rules and returns one Target per
// selected context. Mistakes in the selection are UsageErrors that say what to do; a context
// whose credentials cannot be turned into a REST config becomes a Target with ConfigErr, so the
// other contexts are still queried.
func ResolveTargets(sel ContextSelection) ([]Target, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = sel.Kubeconfig
	raw, err := rules.Load()
	if err != nil {
		return nil, Usagef("load kubeconfig: %v; check --kubeconfig or $KUBECONFIG", err)
	}

	names := append([]string(nil), sel.Contexts...)
	if sel.ContextsFile != "" {
		fromFile, err := ReadContextsFile(sel.ContextsFile)
		if err != nil {
			return nil, err
		}
		if len(fromFile) == 0 {
			return nil, Usagef("--contexts-file %s names no context: write one context name per line", sel.ContextsFile)
		}
		names = append(names, fromFile...)
	}
	if sel.All {
		if len(names) > 0 {
			return nil, Usagef("--all-contexts cannot be combined with --context or --contexts-file: pick one way to choose contexts")
		}
		for n := range raw.Contexts {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, Usagef("--all-contexts: the kubeconfig (%s) has no contexts", describeKubeconfig(rules))
		}
	}
	if len(names) == 0 {
		return nil, Usagef("no contexts to query: name them with --context a --context b, list them in --contexts-file, or use --all-contexts")
	}

	var unknown []string
	seen := map[string]bool{}
	var uniq []string
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		uniq = append(uniq, n)
		if _, ok := raw.Contexts[n]; !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return nil, Usagef("unknown context %s in the kubeconfig (%s); known contexts: %s",
			quoteList(unknown), describeKubeconfig(rules), strings.Join(sortedKeys(raw.Contexts), ", "))
	}

	targets := make([]Target, 0, len(uniq))
	for _, n := range uniq {
		t := Target{Context: n}
		if c := raw.Contexts[n]; c != nil {
			if cl := raw.Clusters[c.Cluster]; cl != nil {
				t.Server = cl.Server
			}
		}
		cc := clientcmd.NewNonInteractiveClientConfig(*raw, n, &clientcmd.ConfigOverrides{}, rules)
		t.Namespace = "default"
		if ns, _, err := cc.Namespace(); err == nil && ns != "" {
			t.Namespace = ns
		}
		cfg, err := cc.ClientConfig()
		if err != nil {
			t.ConfigErr = fmt.Errorf("build client config for context %q: %w", n, err)
		} else {
			t.Config = cfg
		}
		targets = append(targets, t)
	}
	return targets, nil
}

func describeKubeconfig(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return rules.ExplicitPath
	}
	if p := rules.GetLoadingPrecedence(); len(p) > 0 {
		return strings.Join(p, string(os.PathListSeparator))
	}
	return "no kubeconfig file found"
}

func sortedKeys(m map[string]*clientcmdapi.Context) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"(none)"}
	}
	return out
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// DefaultNamespace is the namespace the targets' contexts agree on, for when neither
// --namespace nor --all-namespaces is given. Contexts that default to different namespaces are
// a UsageError: a fleet view of mixed namespaces would compare unrelated Workloads.
func DefaultNamespace(targets []Target) (string, error) {
	byNS := map[string][]string{}
	for _, t := range targets {
		byNS[t.Namespace] = append(byNS[t.Namespace], t.Context)
	}
	if len(byNS) == 1 {
		for ns := range byNS {
			return ns, nil
		}
	}
	var parts []string
	for _, ns := range sortedMapKeys(byNS) {
		parts = append(parts, fmt.Sprintf("%s (%s)", ns, strings.Join(byNS[ns], ", ")))
	}
	return "", Usagef("the contexts default to different namespaces: %s; pass --namespace NAME or --all-namespaces", strings.Join(parts, ", "))
}
