package overlay

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func testMember(name string, id int32, typ, endpoint string, cidrs ...string) polykubev1alpha1.ClusterMember {
	return polykubev1alpha1.ClusterMember{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: polykubev1alpha1.ClusterMemberSpec{
			Provider: "onprem",
			Mesh:     polykubev1alpha1.ClusterMeshSettings{ClusterID: id, PodCIDRs: cidrs},
			Network:  polykubev1alpha1.NetworkOverlay{Type: typ, Endpoint: endpoint},
		},
	}
}

func testKey(t *testing.T) wgtypes.Key {
	t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k.PublicKey()
}

func TestPeers(t *testing.T) {
	overlay := netip.MustParsePrefix("100.96.0.0/16")
	kb, kc, kd := testKey(t), testKey(t), testKey(t)
	roster := []polykubev1alpha1.ClusterMember{
		testMember("delta", 4, "netmaker", "", "10.4.0.0/16"),
		testMember("charlie", 3, "netmaker", "[2001:db8::3]:51820", "10.3.0.0/16", "fd00:3::/56"),
		testMember("alpha", 1, "netmaker", "198.51.100.1:51820", "10.1.0.0/16"),
		testMember("bravo", 2, "netmaker", "198.51.100.2:51820", "10.2.0.0/16"),
		testMember("echo", 5, "none", "", "10.5.0.0/16"),
		testMember("foxtrot", 6, "netmaker", "198.51.100.6:51820", "10.6.0.0/16"),
	}
	keys := map[string]wgtypes.Key{"bravo": kb, "charlie": kc, "delta": kd}

	peers, skipped, err := Peers("alpha", roster, overlay, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{
		{Member: "bravo", PublicKey: kb, Endpoint: "198.51.100.2:51820", AllowedIPs: []netip.Prefix{
			netip.MustParsePrefix("100.96.0.2/32"), netip.MustParsePrefix("10.2.0.0/16")}},
		{Member: "charlie", PublicKey: kc, Endpoint: "[2001:db8::3]:51820", AllowedIPs: []netip.Prefix{
			netip.MustParsePrefix("100.96.0.3/32"), netip.MustParsePrefix("10.3.0.0/16"), netip.MustParsePrefix("fd00:3::/56")}},
	}
	if !reflect.DeepEqual(peers, want) {
		t.Fatalf("peers of alpha:\n got %+v\nwant %+v", peers, want)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[s.Member] = s.Reason
	}
	for member, wantIn := range map[string]string{
		"delta":   "spec.network.endpoint is empty",
		"echo":    "shares the underlay",
		"foxtrot": "no public key published",
	} {
		if !strings.Contains(reasons[member], wantIn) {
			t.Errorf("skipped %s: reason %q, want it to say %q", member, reasons[member], wantIn)
		}
	}
	if len(skipped) != 3 {
		t.Errorf("skipped %+v, want delta, echo and foxtrot only", skipped)
	}

	// Every node derives its peers from the same roster: alpha's entry in bravo's list is what
	// alpha is, whatever order the roster arrives in.
	keys["alpha"] = testKey(t)
	reversed := make([]polykubev1alpha1.ClusterMember, len(roster))
	for i := range roster {
		reversed[len(roster)-1-i] = roster[i]
	}
	fromBravo, _, err := Peers("bravo", reversed, overlay, keys)
	if err != nil {
		t.Fatal(err)
	}
	if fromBravo[0].Member != "alpha" || fromBravo[0].AllowedIPs[0] != netip.MustParsePrefix("100.96.0.1/32") {
		t.Fatalf("bravo's first peer %+v, want alpha at 100.96.0.1/32", fromBravo[0])
	}
}

func TestPeers_LocalMemberErrors(t *testing.T) {
	overlay := netip.MustParsePrefix("100.96.0.0/16")
	roster := []polykubev1alpha1.ClusterMember{testMember("alpha", 1, "none", "", "10.1.0.0/16")}
	if _, _, err := Peers("ghost", roster, overlay, nil); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Fatalf("unknown local member: err %v, want one naming it", err)
	}
	if _, _, err := Peers("alpha", roster, overlay, nil); err == nil || !strings.Contains(err.Error(), "netmaker") {
		t.Fatalf("local member without overlay: err %v, want one saying to set netmaker", err)
	}
}

func TestOverlayAddress(t *testing.T) {
	tests := []struct {
		cidr    string
		id      int32
		want    string
		wantErr bool
	}{
		{cidr: "100.96.0.0/16", id: 1, want: "100.96.0.1"},
		{cidr: "100.96.0.0/16", id: 300, want: "100.96.1.44"},
		{cidr: "fd7a:115c::/64", id: 511, want: "fd7a:115c::1ff"},
		{cidr: "100.96.0.0/24", id: 255, wantErr: true}, // the broadcast address
		{cidr: "100.96.0.0/24", id: 0, wantErr: true},
	}
	for _, tc := range tests {
		got, err := OverlayAddress(netip.MustParsePrefix(tc.cidr), tc.id)
		if tc.wantErr {
			if err == nil {
				t.Errorf("OverlayAddress(%s, %d) = %s, want an error", tc.cidr, tc.id, got)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("OverlayAddress(%s, %d) = %s, %v; want %s", tc.cidr, tc.id, got, err, tc.want)
		}
	}
}
