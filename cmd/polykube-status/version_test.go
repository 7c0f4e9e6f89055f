package main

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/version"
)

func TestRun_Version(t *testing.T) {
	oldV, oldC := version.Version, version.Commit
	t.Cleanup(func() { version.Version, version.Commit = oldV, oldC })
	version.Version, version.Commit = "v0.9.1", "0123abc"

	g := NewWithT(t)
	r := runAs("polykube-status", "version")
	g.Expect(r.code).To(Equal(0), r.stderr)
	g.Expect(r.stdout).To(HavePrefix("v0.9.1 (commit 0123abc), go"))

	r = runAs("kubectl-polykube", "version", "-o", "json")
	g.Expect(r.code).To(Equal(0), r.stderr)
	var info version.Info
	g.Expect(json.Unmarshal([]byte(r.stdout), &info)).To(Succeed())
	g.Expect(info.Version).To(Equal("v0.9.1"))

	r = runAs("polykube-status", "version", "extra")
	g.Expect(r.code).To(Equal(2), "a version with arguments is a usage error")
}
