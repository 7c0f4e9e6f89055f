package setup

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// ValidateWatchNamespaces checks a --watch-namespaces list: every entry a namespace name (a DNS
// label), none repeated. An empty list is valid and means every namespace.
func ValidateWatchNamespaces(namespaces []string) error {
	for i, ns := range namespaces {
		if ns == "" {
			return fmt.Errorf("--watch-namespaces=%q has an empty entry: list namespace names separated by commas, "+
				"with no space or trailing comma (or leave the flag empty to watch every namespace)", strings.Join(namespaces, ","))
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--watch-namespaces: %q is not a namespace name (lowercase letters, digits and '-', "+
				"starting and ending with a letter or digit, at most 63 characters): fix or remove it", ns)
		}
		if slices.Contains(namespaces[:i], ns) {
			return fmt.Errorf("--watch-namespaces lists %q twice: list each namespace once", ns)
		}
	}
	return nil
}

// defaultNamespaces confines every namespaced informer of the manager's cache to the watched
// namespaces; nil (every namespace) when none are listed. Cluster-scoped kinds (ClusterMember,
// Federation) are cached cluster-wide either way. A Workload, ServiceEndpoint or
// DatastoreBinding in another namespace never enters the cache, so the operator never sees it:
// it gets no Deployment, no Service and no status.
func defaultNamespaces(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	m := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		m[ns] = cache.Config{}
	}
	return m
}
