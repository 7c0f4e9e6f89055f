package execx

import (
	"bytes"
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/internal/shell"
)

func TestDryRun_PrintsRecordsAndAnswers(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	d := &DryRun{Out: &out, Answers: map[string]string{
		"docker network inspect":      "generic",
		"docker network inspect kind": "172.18.0.1",
	}}
	ctx := context.Background()

	got, err := d.Run(ctx, Command("docker", "network", "inspect", "kind", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal("172.18.0.1"), "the longest matching prefix answers")

	got, err = d.Run(ctx, Command("cilium", "status", "--wait"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeEmpty())

	g.Expect(d.Note("copy Secret %s\nline two", "kube-system/cilium-ca")).To(BeFalse(), "a dry run performs no action")
	g.Expect(d.DryRun()).To(BeTrue())
	g.Expect(d.Commands()).To(HaveLen(2))
	g.Expect(out.String()).To(Equal(
		"  $ docker network inspect kind -f \"{{range .IPAM.Config}}{{.Gateway}} {{end}}\"\n" +
			"  $ cilium status --wait\n" +
			"  # copy Secret kube-system/cilium-ca\n" +
			"  #   line two\n"))
}

func TestExec_RunsAndReportsTheCommandLine(t *testing.T) {
	g := NewWithT(t)
	var log bytes.Buffer
	e := Exec{Log: &log}
	ctx := context.Background()

	out, err := e.Run(ctx, Command("sh", "-c", "echo hello"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal("hello\n"))

	_, err = e.Run(ctx, Command("sh", "-c", "echo broken >&2; exit 3"))
	var serr *shell.Error
	g.Expect(errors.As(err, &serr)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring(`sh -c "echo broken >&2; exit 3"`))
	g.Expect(err.Error()).To(ContainSubstring("broken"))
	g.Expect(e.Note("create cluster a\ndetails")).To(BeTrue())
	g.Expect(log.String()).To(ContainSubstring("  # create cluster a\n"))
	g.Expect(log.String()).NotTo(ContainSubstring("details"))
}
