package harness

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/topology"
)

// gitState is what the scenario committed to the federation's Git repository.
type gitState struct {
	// Revision is the last Git revision this scenario committed.
	Revision string
	// commitNumber numbers that commit among all the scenarios' commits.
	commitNumber int
	// gitFiles are the files of the scenario's directory in Git, by name.
	gitFiles map[string][]byte
	// rosterDropped says the scenario committed a roster without a member, to restore.
	rosterDropped bool
	// deletedApps are the Argo CD Applications the scenario deleted, per cluster, to create
	// again.
	deletedApps map[string]*unstructured.Unstructured
}

// gitDir is the scenario's directory in the repository.
func (sc *Scenario) gitDir() string { return path.Join(sc.Fed.Git().Dir(), sc.Namespace) }

// gitName is the file name of a scenario object in its directory.
func gitName(kind, name string) string { return strings.ToLower(kind) + "-" + name + ".yaml" }

// commit changes files of the scenario's directory (nil content removes one) in one commit,
// rewriting the directory's kustomization.yaml to list exactly its files, or removing the
// directory when no file is left. It remembers the revision.
func (sc *Scenario) commit(ctx context.Context, message string, files map[string][]byte) error {
	for name, data := range files {
		if data == nil {
			delete(sc.gitFiles, name)
		} else {
			sc.gitFiles[name] = data
		}
	}
	dir := sc.gitDir()
	var put map[string][]byte
	var remove []string
	if len(sc.gitFiles) == 0 {
		remove = []string{dir}
	} else {
		put = map[string][]byte{}
		names := sortedKeys(sc.gitFiles)
		for _, n := range names {
			put[path.Join(dir, n)] = sc.gitFiles[n]
		}
		put[path.Join(dir, "kustomization.yaml")] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + strings.Join(names, "\n  - ") + "\n")
		for n := range files {
			if files[n] == nil {
				remove = append(remove, path.Join(dir, n))
			}
		}
	}
	n, err := sc.retired.commit(func(retiredDirs []string) error {
		rev, err := sc.Fed.Git().Commit(ctx, message, put, append(remove, retiredDirs...))
		if err != nil {
			return fmt.Errorf("commit to Git (%s): %w", message, err)
		}
		sc.Revision = rev
		return nil
	})
	if err != nil {
		return err
	}
	sc.commitNumber = n
	return nil
}

// AwaitDelivered waits until every named cluster's Flux has applied the scenario's last revision.
func (sc *Scenario) AwaitDelivered(ctx context.Context, clusters []string, w topology.Wait) error {
	if sc.Revision == "" {
		return errors.New("the scenario has committed nothing to Git yet, so there is no revision to wait for")
	}
	what := fmt.Sprintf("Flux in %s to apply revision %s", strings.Join(clusters, ", "), sc.Revision)
	err := Await(ctx, w, what, func(ctx context.Context) error {
		var behind []string
		for _, cl := range clusters {
			rev, _, err := sc.Fed.Git().AppliedRevision(ctx, cl)
			if err != nil {
				behind = append(behind, fmt.Sprintf("%s: %v", cl, err))
			} else if !sameRevision(rev, sc.Revision) {
				behind = append(behind, fmt.Sprintf("%s applied %q", cl, rev))
			}
		}
		if len(behind) > 0 {
			return errors.New(strings.Join(behind, "; "))
		}
		return nil
	})
	if err != nil || len(clusters) != len(sc.Fed.Clusters()) {
		return err
	}
	// Every cluster applied this commit, and so pruned what retired scenarios had in Git.
	var errs []error
	for _, ns := range sc.retired.pruned(sc.commitNumber) {
		errs = append(errs, sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, _ string, c client.Client) error {
			return deleteNamespace(ctx, c, ns)
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up the namespaces of earlier scenarios: %w", err)
	}
	return nil
}

// sameRevision compares a Flux revision ("main@sha1:abc…") with a commit hash.
func sameRevision(applied, commit string) bool {
	if applied == "" || commit == "" {
		return false
	}
	return applied == commit || strings.HasSuffix(applied, ":"+commit) || strings.HasSuffix(applied, "/"+commit)
}
