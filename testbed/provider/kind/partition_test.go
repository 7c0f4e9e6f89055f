package kind

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
)

// fakeIptables stands in for iptables and ip6tables in partitionScript's tests: it keeps one
// rule per line in $IPT_STATE/<its name>, and answers -N, -C, -A, -I and -D as iptables does
// (-N of an existing chain and -C or -D of a missing rule fail).
const fakeIptables = `#!/bin/sh
f="$IPT_STATE/$(basename "$0")"; touch "$f"
[ "$1" = -w ] && shift
[ "$1" = -t ] && { t=$2; shift 2; }
op=$1; chain=$2; shift 2
[ "$op" = -I ] && [ "$1" = 1 ] && shift
line="$t $chain $*"
case $op in
  -N) grep -qxF "$t chain $chain" "$f" && exit 1; echo "$t chain $chain" >> "$f" ;;
  -C) grep -qxF "$line" "$f" ;;
  -A|-I) echo "$line" >> "$f" ;;
  -D) grep -qxF "$line" "$f" || exit 1
      awk -v l="$line" '$0 == l && !done { done = 1; next } { print }' "$f" > "$f.new" && mv "$f.new" "$f" ;;
  -F) awk -v p="$t $chain " 'index($0, p) != 1' "$f" > "$f.new" && mv "$f.new" "$f" ;;
  -L) ;;
  *) echo "fake iptables: unexpected $op" >&2; exit 2 ;;
esac
`

// fakeIP answers `ip -o -4 addr show` as a kind node on two networks would.
const fakeIP = `#!/bin/sh
echo "1: lo    inet 127.0.0.1/8 scope host lo"
echo "42: eth0    inet 172.19.0.2/16 brd 172.19.255.255 scope global eth0"
echo "44: eth1    inet 172.30.0.3/16 brd 172.30.255.255 scope global eth1"
`

func runScript(t *testing.T, state, script string) {
	t.Helper()
	bin := filepath.Join(state, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"iptables", "ip6tables"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(fakeIptables), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "ip"), []byte(fakeIP), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "IPT_STATE="+state)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script failed: %v\n%s\n--- script:\n%s", err, out, script)
	}
}

func rules(t *testing.T, state, tool string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, tool))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestPartitionScript_CutsBothWaysOnceAndHealsOnlyItsRules(t *testing.T) {
	g := NewWithT(t)
	state := t.TempDir()
	peers := []node{{name: "b-control-plane", ipv4: "172.18.0.3", ipv6: "fc00::3"}, {name: "b-worker", ipv4: "172.18.0.4"}}

	// Cut twice: the second run adds nothing (a fault stopped twice is in effect once).
	runScript(t, state, partitionScript(peers, true))
	runScript(t, state, partitionScript(peers, true))
	g.Expect(rules(t, state, "iptables")).To(ConsistOf(
		"raw chain POLYKUBE-PARTITION",
		"raw PREROUTING -j POLYKUBE-PARTITION",
		"raw OUTPUT -j POLYKUBE-PARTITION",
		"raw POLYKUBE-PARTITION -s 172.18.0.3 -j DROP",
		"raw POLYKUBE-PARTITION -d 172.18.0.3 -j DROP",
		"raw POLYKUBE-PARTITION -s 172.18.0.4 -j DROP",
		"raw POLYKUBE-PARTITION -d 172.18.0.4 -j DROP",
	))
	g.Expect(rules(t, state, "ip6tables")).To(ConsistOf(
		"raw chain POLYKUBE-PARTITION",
		"raw PREROUTING -j POLYKUBE-PARTITION",
		"raw OUTPUT -j POLYKUBE-PARTITION",
		"raw POLYKUBE-PARTITION -s fc00::3 -j DROP",
		"raw POLYKUBE-PARTITION -d fc00::3 -j DROP",
	))

	// A partition from a third cluster, then healing the first: the third's rules stay.
	third := []node{{name: "c-control-plane", ipv4: "172.18.0.9"}}
	runScript(t, state, partitionScript(third, true))
	runScript(t, state, partitionScript(peers, false))
	runScript(t, state, partitionScript(peers, false)) // healing twice is fine
	g.Expect(rules(t, state, "iptables")).To(ConsistOf(
		"raw chain POLYKUBE-PARTITION",
		"raw PREROUTING -j POLYKUBE-PARTITION",
		"raw OUTPUT -j POLYKUBE-PARTITION",
		"raw POLYKUBE-PARTITION -s 172.18.0.9 -j DROP",
		"raw POLYKUBE-PARTITION -d 172.18.0.9 -j DROP",
	))
	g.Expect(rules(t, state, "ip6tables")).NotTo(ContainElement(ContainSubstring("DROP")))
}

func TestPartition_DryRunCutsEveryNodeOfBothSides(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	dry := &execx.DryRun{Out: &out}
	top := kindTopology()
	p := New(provider.Options{Dir: "/run/polykube", Topology: top}, Options{Runner: dry, Workers: 1})
	ctx := context.Background()

	g.Expect(p.Partition(ctx, "aws-eu-central-1", "gcp-europe-west3")).To(Succeed())
	var execs []string
	for _, c := range dry.Commands() {
		g.Expect(c.Path).To(Equal("docker"))
		g.Expect(c.Args[:2]).To(Equal([]string{"exec", c.Args[1]}))
		execs = append(execs, c.Args[1])
		script := c.Args[len(c.Args)-1]
		peer := "gcp-europe-west3"
		if strings.HasPrefix(c.Args[1], "gcp-") {
			peer = "aws-eu-central-1"
		}
		g.Expect(script).To(ContainSubstring("rule iptables -s <ipv4 of " + peer + "-control-plane>"))
		g.Expect(script).To(ContainSubstring("rule iptables -d <ipv4 of " + peer + "-worker>"))
	}
	g.Expect(execs).To(Equal([]string{
		"aws-eu-central-1-control-plane", "aws-eu-central-1-worker",
		"gcp-europe-west3-control-plane", "gcp-europe-west3-worker",
	}))
	g.Expect(p.Partition(ctx, "aws-eu-central-1", "aws-eu-central-1")).To(MatchError(ContainSubstring("two different clusters")))
}
