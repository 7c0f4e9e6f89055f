package incluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/provider/k0s"
	"github.com/polykube/polykube/testbed/topology"
)

// Options configure a run of the in-cluster bed: the options every bed is opened with. Open needs
// Dir (the run's state directory); Topology's Provider is replaced by Provider when that is set,
// its image source by Images.
type Options = testbed.BedOptions

// DryRunAnswers are what a dry run pretends the commands that are read from answered.
var DryRunAnswers = map[string]string{
	"docker network inspect kind ":          "172.18.0.1 fc00:f853:ccd:e793::1 ",
	"docker network inspect " + k0s.Network: "172.19.0.1 ",
	"docker port k0s-":                      "127.0.0.1:<port>\n",
	// A dry run plans for a cgroup v2 host; a real run asks Docker.
	"docker info --format {{.CgroupVersion}}": "2\n",
}

// Open prepares a run: it reads the run's recorded state if there is one, and builds the
// provider. It creates nothing.
func Open(opts Options) (*Bed, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Runner == nil {
		if opts.DryRun {
			opts.Runner = &execx.DryRun{Out: opts.Log, Answers: DryRunAnswers}
		} else {
			opts.Runner = execx.Exec{Log: opts.Log}
		}
	}
	st := &State{Topology: opts.Topology, K0sHosts: opts.K0sHosts}
	if data, err := os.ReadFile(statePath(opts.Dir)); err == nil && !opts.DryRun {
		var rec State
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("read %s: %w", statePath(opts.Dir), err)
		}
		if st.Topology == nil {
			st = &rec
		} else {
			st.GitAddr, st.Seeded, st.Operator, st.ServiceAccount = rec.GitAddr, rec.Seeded, rec.Operator, rec.ServiceAccount
		}
	}
	if st.Topology == nil {
		return nil, fmt.Errorf("no run of the in-cluster bed in %s: bring one up first (polykube-testbed up --provider kind, or k0s)", opts.Dir)
	}
	if opts.SourceDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if opts.SourceDir, err = gobuild.FindRoot(wd); err != nil {
			return nil, fmt.Errorf("find the Polykube checkout (the in-cluster bed builds the operator's image from it): %w; set the source directory", err)
		}
	}
	top := *st.Topology
	if opts.Provider != "" {
		top.Provider = opts.Provider
	}
	if opts.Images != "" {
		top.Images = opts.Images
	}
	if top.HasAddon(topology.AddonMeshMirror) {
		return nil, fmt.Errorf("addons: %q stands in for Cilium where the add-ons run on the host (kwok); provider %s runs Cilium, whose own endpoint-slice synchronisation is what to use here: drop it from the topology", topology.AddonMeshMirror, top.Provider)
	}
	if err := top.Validate(); err != nil {
		return nil, err
	}
	st.Topology = &top
	b := &Bed{opts: opts, state: st, procs: proc.Dir(filepath.Join(opts.Dir, "procs"))}
	popts := provider.Options{Dir: filepath.Join(opts.Dir, "clusters"), Topology: st.Topology, Log: opts.Log}
	b.host = hostFacts(opts.Runner)
	reg, err := provider.Lookup(top.Provider)
	if err != nil {
		return nil, err
	}
	if pl, err := provider.PlacementOf(&top); err != nil {
		return nil, err
	} else if pl != provider.AddonsInCluster {
		return nil, fmt.Errorf("provider %q has no datapath: its add-ons run as host processes (polykube-testbed up%s); use %s", top.Provider, testbed.ProviderFlag(&top), provider.Join(provider.NamesAt(provider.AddonsInCluster), "or", ""))
	}
	setup := provider.Setup{Options: popts, Runner: opts.Runner, CgroupV1: b.host.cgroupV1, KubeProxy: !b.kubeProxyReplacement(), HostsFile: st.K0sHosts, Images: top.Images}
	if li, ok := datapath.LocalNodeImageOf(top.Provider); ok && top.Images == datapath.ImagesLocal {
		setup.NodeImage = li.Refs[0]
	}
	p, err := reg.New(setup)
	if err != nil {
		return nil, err
	}
	b.prov = p
	b.env = &datapath.Env{Runner: opts.Runner, Topology: st.Topology, Out: opts.Log, Image: st.RegistryImage}
	for i, c := range st.Topology.Clusters {
		var host string
		var port int
		if ep, ok := b.prov.(apiEndpointer); ok {
			host, port = ep.APIServerEndpoint(c.Name)
		}
		b.env.Members = append(b.env.Members, datapath.Member{
			Cluster: c, Index: i, APIHost: host, APIPort: port,
			Kubeconfig: filepath.Join(popts.Dir, c.Name, "kubeconfig"),
		})
	}
	for i := range b.env.Members {
		cl, err := b.prov.Kubeconfig(context.Background(), b.env.Members[i].Name)
		if err == nil {
			b.env.Members[i].Kubeconfig, b.env.Members[i].Context = cl.Kubeconfig, cl.Context
		}
	}
	return b, nil
}
