package datapath

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseActiveBackends(t *testing.T) {
	g := NewWithT(t)
	// Abridged from a Cilium 1.20 agent: a global Service with two local backends, one remote
	// and one remote that is terminating; the same backend listed twice counts once.
	data := []byte(`[
 {"spec":{"frontend-address":{"ip":"10.92.0.10","port":53,"scope":"external"},"backend-addresses":[{"ip":"10.242.0.5","port":53,"state":"active"}]}},
 {"spec":{"frontend-address":{"ip":"10.92.14.7","port":80,"scope":"external"},"backend-addresses":[
   {"ip":"10.242.0.11","port":8080,"state":"active"},
   {"ip":"10.242.0.12","port":8080,"state":"active"},
   {"ip":"10.243.0.9","port":8080,"state":"active"},
   {"ip":"10.243.0.9","port":8080,"state":"active"},
   {"ip":"10.241.0.7","port":8080,"state":"terminating"},
   {"ip":"10.241.0.8","port":8080}
 ]}}]`)
	n, found, err := ParseActiveBackends(data, "10.92.14.7", 80)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(n).To(Equal(4))

	_, found, err = ParseActiveBackends(data, "10.92.14.7", 443)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeFalse())

	_, _, err = ParseActiveBackends([]byte("Cannot get services list"), "10.92.14.7", 80)
	g.Expect(err).To(MatchError(ContainSubstring("service list -o json")))
}
