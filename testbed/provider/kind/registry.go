package kind

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"github.com/polykube/polykube/testbed/provider"
)

// RegistryHostsDir is where the nodes' containerd looks for a registry's hosts.toml: the kind
// configuration of a run with a registry points containerd's CRI at it
// (ContainerdRegistryPatch), and containerd reads it at every pull, so a registry can be added
// to a running node.
const RegistryHostsDir = provider.RegistryHostsDir

// ContainerdRegistryPatch makes the nodes' containerd read registry hosts from RegistryHostsDir
// (containerd's CRI reads no hosts directory unless told).
var ContainerdRegistryPatch = fmt.Sprintf(`[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = %q
`, RegistryHostsDir)

// TrustRegistry writes a hosts.toml into every node of the cluster under host's directory, so
// that its kubelet pulls images named host/... from the plain-HTTP registry at addr: host is
// addr itself, or a mirror name served by that registry. The cluster must have been created
// with Options.RegistryHosts (the CRI's config_path).
func (p *Provider) TrustRegistry(_ context.Context, name, host, addr string) error {
	file := path.Join(RegistryHostsDir, host, "hosts.toml")
	if !p.o.Runner.Note("write %s into every node of %s (plain HTTP to %s, pull and resolve)", file, name, addr) {
		return nil
	}
	if !p.o.RegistryHosts {
		return fmt.Errorf("cluster %s was not created to read registry hosts (kind.Options.RegistryHosts): recreate it with the registry add-on in the topology", name)
	}
	ns, err := p.listNodes(name)
	if err != nil {
		return err
	}
	for _, n := range ns {
		if err := nodeutils.WriteFile(n, file, provider.RegistryHostsTOML(addr)); err != nil {
			return fmt.Errorf("node %s: write %s: %w", n, file, err)
		}
	}
	return nil
}

// NodeImages lists, by node, the references (tags and digests) of the images in the containerd
// of every node of the cluster that start with prefix, as `crictl images` reports them: what the
// kubelet pulled, as containerd saw it.
func (p *Provider) NodeImages(_ context.Context, name, prefix string) (map[string][]string, error) {
	ns, err := p.listNodes(name)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, n := range ns {
		var buf bytes.Buffer
		if err := n.Command("crictl", "images", "--output", "json").SetStdout(&buf).Run(); err != nil {
			return nil, fmt.Errorf("node %s: crictl images: %w", n, err)
		}
		var list struct {
			Images []struct {
				RepoTags    []string `json:"repoTags"`
				RepoDigests []string `json:"repoDigests"`
			} `json:"images"`
		}
		if err := json.Unmarshal(buf.Bytes(), &list); err != nil {
			return nil, fmt.Errorf("node %s: read crictl images: %w", n, err)
		}
		out[n.String()] = []string{}
		for _, img := range list.Images {
			for _, r := range append(img.RepoTags, img.RepoDigests...) {
				if strings.HasPrefix(r, prefix) {
					out[n.String()] = append(out[n.String()], r)
				}
			}
		}
	}
	return out, nil
}
