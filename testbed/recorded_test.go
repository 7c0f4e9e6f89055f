package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
)

func TestReadRecorded(t *testing.T) {
	g := gomega.NewWithT(t)
	type rec struct{ Name string }
	dir := t.TempDir()

	got, err := ReadRecorded[rec](filepath.Join(dir, "none.json"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(got).To(gomega.BeNil(), "nothing recorded is no error")

	good := filepath.Join(dir, "good.json")
	g.Expect(os.WriteFile(good, []byte(`{"Name":"kind"}`), 0o600)).To(gomega.Succeed())
	got, err = ReadRecorded[rec](good)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(got).To(gomega.Equal(&rec{Name: "kind"}))

	bad := filepath.Join(dir, "bad.json")
	g.Expect(os.WriteFile(bad, []byte(`{"Name":`), 0o600)).To(gomega.Succeed())
	_, err = ReadRecorded[rec](bad)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("read " + bad + ":")))
	g.Expect(os.ReadFile(bad)).To(gomega.Equal([]byte(`{"Name":`)), "a bad file is left as it was")
}
