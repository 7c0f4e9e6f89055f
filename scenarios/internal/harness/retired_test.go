package harness

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRetiredScenarios(t *testing.T) {
	g := NewWithT(t)
	var r retiredScenarios
	commit := func(fail bool) (int, []string, error) {
		var got []string
		n, err := r.commit(func(remove []string) error {
			got = remove
			if fail {
				return errors.New("push refused")
			}
			return nil
		})
		return n, got, err
	}

	// A commit with nothing retired removes nothing.
	n1, removed, err := commit(false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n1).To(Equal(1))
	g.Expect(removed).To(BeEmpty())

	r.retire("workloads/pk-a", "pk-a")
	r.retire("workloads/pk-b", "pk-b")
	g.Expect(r.pruned(n1)).To(BeEmpty(), "nothing is pruned before a commit removed it")

	// A failed commit removes nothing and numbers nothing.
	_, removed, err = commit(true)
	g.Expect(err).To(HaveOccurred())
	g.Expect(removed).To(ConsistOf("workloads/pk-a", "workloads/pk-b"))

	n2, removed, err := commit(false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n2).To(Equal(2))
	g.Expect(removed).To(ConsistOf("workloads/pk-a", "workloads/pk-b"))

	// Retired after commit 2: removed by commit 3, not by 2.
	r.retire("workloads/pk-c", "pk-c")
	g.Expect(r.pruned(n1)).To(BeEmpty(), "commit 1 did not remove them")
	n3, removed, err := commit(false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(ConsistOf("workloads/pk-c"), "a directory is removed once")

	g.Expect(r.pruned(n2)).To(ConsistOf("pk-a", "pk-b"))
	g.Expect(r.pruned(n2)).To(BeEmpty(), "a namespace is handed out once")
	g.Expect(r.pruned(n3)).To(ConsistOf("pk-c"))
}
