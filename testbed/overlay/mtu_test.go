package overlay

import "testing"

func TestComputeMTU(t *testing.T) {
	tests := []struct {
		name          string
		underlay      int
		ipv6          bool
		wantWireGuard int
		wantPod       int
		wantIPv6Pods  bool
		wantErr       bool
	}{
		{name: "IPv4 Ethernet", underlay: 1500, wantWireGuard: 1440, wantPod: 1390, wantIPv6Pods: true},
		{name: "IPv6 Ethernet", underlay: 1500, ipv6: true, wantWireGuard: 1420, wantPod: 1370, wantIPv6Pods: true},
		{name: "GCP VPC default", underlay: 1460, ipv6: true, wantWireGuard: 1380, wantPod: 1330, wantIPv6Pods: true},
		{name: "jumbo frames", underlay: 9001, wantWireGuard: 8941, wantPod: 8891, wantIPv6Pods: true},
		{name: "too small for IPv6 pods", underlay: 1380, ipv6: true, wantWireGuard: 1300, wantPod: 1250},
		{name: "too small for pods at all", underlay: 680, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ComputeMTU(tc.underlay, tc.ipv6)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ComputeMTU(%d, %v) = %+v, want an error", tc.underlay, tc.ipv6, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.WireGuard != tc.wantWireGuard || got.Pod != tc.wantPod || got.CarriesIPv6() != tc.wantIPv6Pods {
				t.Fatalf("ComputeMTU(%d, %v) = %+v (IPv6 pods %v), want WireGuard %d, pod %d (IPv6 pods %v)",
					tc.underlay, tc.ipv6, got, got.CarriesIPv6(), tc.wantWireGuard, tc.wantPod, tc.wantIPv6Pods)
			}
		})
	}
}
