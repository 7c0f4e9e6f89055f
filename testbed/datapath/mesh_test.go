package datapath

import (
	"testing"

	. "github.com/onsi/gomega"
)

// An excerpt of `cilium-dbg status -o json` of a 1.20 agent in a three-cluster mesh, with one
// peer still connecting.
const agentStatusJSON = `{
  "cilium": {"state": "Ok"},
  "cluster-mesh": {
    "clusters": [
      {"name": "beta", "ready": true, "status": "ready", "num-nodes": 1, "num-endpoints": 4},
      {"name": "gamma", "ready": false, "status": "Waiting for initial connection to be established"}
    ],
    "num-global-services": 0
  }
}`

func TestParseMeshStatus(t *testing.T) {
	g := NewWithT(t)
	r, err := ParseMeshStatus("cilium-abc", []byte(agentStatusJSON), []string{"beta", "gamma"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Ready).To(Equal([]string{"beta"}))
	g.Expect(r.Err()).To(MatchError("agent cilium-abc: remote clusters not ready: gamma: Waiting for initial connection to be established"))

	r, err = ParseMeshStatus("cilium-abc", []byte(agentStatusJSON), []string{"beta"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Err()).To(Succeed(), "clusters not asked for do not count")

	r, err = ParseMeshStatus("cilium-abc", []byte(`{"cilium": {"state": "Ok"}}`), []string{"beta"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Err()).To(MatchError(ContainSubstring("beta: not configured in this agent")), "no ClusterMesh at all")

	_, err = ParseMeshStatus("cilium-abc", []byte("Error: cannot reach the agent"), []string{"beta"})
	g.Expect(err).To(MatchError(ContainSubstring("read cilium-dbg status of cilium-abc")))
}

func TestMissingCapabilities(t *testing.T) {
	g := NewWithT(t)
	// This development VM's bounding set: every capability but CAP_SYS_RESOURCE (bit 24).
	g.Expect(missingCapabilities("Name:\tx\nCapBnd:\t000001fffeffffff\n")).To(Equal([]string{"SYS_RESOURCE"}))
	g.Expect(missingCapabilities("CapBnd:\t000001ffffffffff\n")).To(BeEmpty())
	g.Expect(missingCapabilities("Name:\tx\n")).To(BeNil(), "no CapBnd line: nothing known to be missing")
}

func TestCiliumValues(t *testing.T) {
	g := NewWithT(t)
	m := Member{Index: 1, APIHost: "beta-control-plane", APIPort: 6443}
	m.Name, m.ClusterID = "beta", 2
	ca := &CA{CertPEM: []byte("cert"), KeyPEM: []byte("key")}
	v := CiliumValues(m, CiliumOptions{
		Images: LocalCiliumImages(), MissingCapabilities: []string{"SYS_RESOURCE"}, CA: ca,
		Peers: []MeshPeer{{Name: "alpha", IPs: []string{"172.18.0.2"}, Port: 32379}},
	})
	g.Expect(v["cluster"]).To(Equal(map[string]any{"name": "beta", "id": 2}))
	g.Expect(v["kubeProxyReplacement"]).To(BeFalse())
	g.Expect(v["socketLB"]).To(Equal(map[string]any{"enabled": false}), "without KPR no socket LB")
	g.Expect(v["image"]).To(Equal(map[string]any{"override": "polykube.local/cilium/cilium:v1.20.2", "useDigest": false, "pullPolicy": "Never"}))
	caps := v["securityContext"].(map[string]any)["capabilities"].(map[string]any)
	g.Expect(caps["ciliumAgent"]).NotTo(ContainElement("SYS_RESOURCE"))
	g.Expect(caps["ciliumAgent"]).To(ContainElement("NET_ADMIN"))
	g.Expect(caps["cleanCiliumState"]).NotTo(ContainElement("SYS_RESOURCE"))
	mesh := v["clustermesh"].(map[string]any)
	g.Expect(mesh["apiserver"].(map[string]any)["service"]).To(Equal(map[string]any{"type": "NodePort", "nodePort": 32380}))
	g.Expect(mesh["config"]).To(Equal(map[string]any{"enabled": true, "clusters": []any{
		map[string]any{"name": "alpha", "port": 32379, "ips": []any{"172.18.0.2"}},
	}}))
	g.Expect(mesh["enableEndpointSliceSynchronization"]).To(BeTrue(), "the mesh view of capacity failover")
	g.Expect(mesh["cacheTTL"]).To(Equal("10s"), "a lost peer's endpoints must leave the mesh")
	g.Expect(v["tls"]).To(Equal(map[string]any{"ca": map[string]any{"cert": "Y2VydA==", "key": "a2V5"}}))

	// One cluster, kube-proxy replaced, a complete bounding set: no mesh, no capability lists.
	v = CiliumValues(m, CiliumOptions{KubeProxyReplacement: true})
	g.Expect(v).NotTo(HaveKey("clustermesh"))
	g.Expect(v).NotTo(HaveKey("securityContext"))
	g.Expect(v).NotTo(HaveKey("socketLB"))
	g.Expect(v["image"]).To(Equal(map[string]any{}), "upstream images: the chart's own")
	g.Expect(v).NotTo(HaveKey("MTU"), "Cilium reads the device's MTU")

	// Over the WireGuard overlay: Cilium is told the overlay interface's MTU.
	v = CiliumValues(m, CiliumOptions{MTU: 1440})
	g.Expect(v["MTU"]).To(Equal(1440))
}
