package datapath

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// The e2e workflow installs the CLIs at the versions pinned here; this keeps them equal.
func TestE2EWorkflow_PinsTheSameVersions(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile("../../.github/workflows/e2e-datapath.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var wf struct {
		Env  map[string]string `json:"env"`
		Jobs map[string]struct {
			Steps []struct {
				Run string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	g.Expect(yaml.Unmarshal(data, &wf)).To(Succeed())
	g.Expect(wf.Env).NotTo(HaveKey("CILIUM_CLI_VERSION"), "Cilium is installed with the Helm SDK, no CLI")
	g.Expect(wf.Env).To(HaveKeyWithValue("FLUX_VERSION", FluxVersion))
	var runs []string
	for _, s := range wf.Jobs["kind"].Steps {
		runs = append(runs, s.Run)
	}
	g.Expect(runs).To(ContainElement("make e2e PROVIDER=kind"))
	g.Expect(runs).To(ContainElement(ContainSubstring("sysctl -w fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=512")))
}
