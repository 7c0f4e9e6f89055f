package wait

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/topology"
)

func w(timeout, interval time.Duration) topology.Wait {
	return topology.Wait{Timeout: topology.Duration{Duration: timeout}, Interval: topology.Duration{Duration: interval}}
}

func TestFor(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()

	n := 0
	g.Expect(For(ctx, w(time.Second, time.Millisecond), "three polls", func(context.Context) error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})).To(gomega.Succeed())
	g.Expect(n).To(gomega.Equal(3))

	err := For(ctx, w(30*time.Millisecond, 5*time.Millisecond), "the impossible", func(context.Context) error {
		return errors.New("still impossible")
	})
	var te *TimeoutError
	g.Expect(errors.As(err, &te)).To(gomega.BeTrue())
	g.Expect(err.Error()).To(gomega.Equal("timed out after 30ms waiting for the impossible: still impossible"))

	calls := 0
	err = For(ctx, w(time.Minute, time.Millisecond), "a broken thing", func(context.Context) error {
		calls++
		return Stop(errors.New("broken for good"))
	})
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("broken for good")))
	g.Expect(calls).To(gomega.Equal(1))

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = For(cctx, w(time.Minute, time.Millisecond), "anything", func(context.Context) error { return errors.New("no") })
	g.Expect(errors.Is(err, context.Canceled)).To(gomega.BeTrue())
}

func TestHTTPOK(t *testing.T) {
	g := gomega.NewWithT(t)
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	ok := HTTPOK(srv.URL)

	g.Expect(ok(context.Background())).To(gomega.MatchError(srv.URL + " answers 503 Service Unavailable"))
	status = http.StatusOK
	g.Expect(ok(context.Background())).To(gomega.Succeed())
	srv.Close()
	g.Expect(ok(context.Background())).To(gomega.HaveOccurred())
	// A URL that can never be asked stops the wait instead of polling it until the timeout.
	err := For(context.Background(), w(time.Minute, time.Millisecond), "a bad URL", HTTPOK("http://bad host/"))
	g.Expect(errors.As(err, new(*TimeoutError))).To(gomega.BeFalse())
}
