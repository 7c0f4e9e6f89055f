package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/datapath"
)

func TestServeAndCall_EveryCallNamesItsCluster(t *testing.T) {
	g := NewWithT(t)
	alpha, err := handler("alpha", "echo-a")
	g.Expect(err).NotTo(HaveOccurred())
	beta, err := handler("beta", "echo-b")
	g.Expect(err).NotTo(HaveOccurred())
	// A stand-in for the global Service: alternate between the two backends, and fail every
	// fifth request, as a backend in a stopped cluster would.
	var n atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		switch {
		case i%5 == 0:
			http.Error(w, "backend gone", http.StatusBadGateway)
		case i%2 == 0:
			alpha.ServeHTTP(w, r)
		default:
			beta.ServeHTTP(w, r)
		}
	}))
	defer front.Close()

	var out bytes.Buffer
	g.Expect(run(context.Background(), []string{"call", "--url", front.URL + "/", "--count", "10", "--timeout", "1s"}, &out, nil)).To(Succeed())
	answers, err := datapath.ParseCalls(out.String(), 10)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	tally := datapath.Count(answers, []string{"alpha", "beta"})
	g.Expect(tally.Of("alpha")).To(Equal(4))
	g.Expect(tally.Of("beta")).To(Equal(4))
	g.Expect(tally.Unanswered).To(Equal(2))
	g.Expect(out.String()).To(ContainSubstring(`"error":"` + front.URL + `/ answered 502 Bad Gateway"`))
}

func TestCall_NewConnectionPerCall(t *testing.T) {
	g := NewWithT(t)
	h, err := handler("alpha", "")
	g.Expect(err).NotTo(HaveOccurred())
	var newConns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	var out bytes.Buffer
	g.Expect(call(context.Background(), &out, srv.URL, 5, time.Second, 0)).To(Succeed())
	g.Expect(newConns.Load()).To(BeEquivalentTo(5), "every call opens its own connection, so every call is balanced anew")
}

func TestHandler_RefusesAnUnsubstitutedClusterName(t *testing.T) {
	g := NewWithT(t)
	_, err := handler("${CLUSTER_NAME}", "p")
	g.Expect(err).To(MatchError(ContainSubstring("polykube.kismet.io/cluster label through the downward API")))
	_, err = handler("", "p")
	g.Expect(err).To(MatchError(ContainSubstring(`CLUSTER_NAME is ""`)))
}

func TestRun_Usage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(run(context.Background(), nil, &bytes.Buffer{}, nil)).To(MatchError(ContainSubstring("usage")))
	g.Expect(run(context.Background(), []string{"dance"}, &bytes.Buffer{}, nil)).To(MatchError(ContainSubstring(`unknown command "dance"`)))
	g.Expect(run(context.Background(), []string{"call"}, &bytes.Buffer{}, nil)).To(MatchError(ContainSubstring("needs --url")))
	getenv := func(string) string { return "" }
	g.Expect(run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0"}, &bytes.Buffer{}, getenv)).To(MatchError(ContainSubstring("CLUSTER_NAME")))
}

func TestReach(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("service") != "git-upload-pack" {
			http.NotFound(w, r)
		}
	}))
	defer ok.Close()
	var out bytes.Buffer
	g.Expect(run(ctx, []string{"reach", "--url", ok.URL + "/polykube/gitops.git/info/refs?service=git-upload-pack"}, &out, nil)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("200 OK"))
	g.Expect(run(ctx, []string{"reach", "--url", ok.URL + "/nope"}, &out, nil)).To(MatchError(ContainSubstring("404")))

	// Nothing listening: the error is the dial's, which the test bed shows the user.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	g.Expect(run(ctx, []string{"reach", "--url", "http://" + addr + "/", "--timeout", "2s"}, &out, nil)).To(MatchError(ContainSubstring("connection refused")))
	g.Expect(run(ctx, []string{"reach"}, &out, nil)).To(MatchError(ContainSubstring("needs --url")))
}

func TestCall_PayloadArrivesWholeOrTheCallFails(t *testing.T) {
	g := NewWithT(t)
	h, err := handler("beta", "echo-b")
	g.Expect(err).NotTo(HaveOccurred())
	const size = 1<<20 + 17
	srv := httptest.NewServer(h)
	defer srv.Close()

	var out bytes.Buffer
	g.Expect(run(context.Background(), []string{"call", "--url", srv.URL + "/", "--count", "3", "--bytes", strconv.Itoa(size)}, &out, nil)).To(Succeed())
	recs, err := datapath.ParseCallRecords(out.String(), 3)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	for _, r := range recs {
		g.Expect(r.Error).To(BeEmpty())
		g.Expect(r.Cluster).To(Equal("beta"))
		g.Expect(r.Bytes).To(BeEquivalentTo(size))
		g.Expect(r.Seconds).To(BeNumerically(">", 0))
	}

	// What a tunnel whose MTU is too small for a segment does to an answer: the rest never
	// comes. The proxy announces the whole answer and sends half of it.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:len(body)/2])
	}))
	defer cut.Close()
	out.Reset()
	g.Expect(run(context.Background(), []string{"call", "--url", cut.URL + "/", "--count", "1", "--bytes", strconv.Itoa(size)}, &out, nil)).To(Succeed())
	recs, err = datapath.ParseCallRecords(out.String(), 1)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(recs[0].Error).To(ContainSubstring("the answer stopped after"))
	g.Expect(recs[0].Bytes).To(BeZero())

	// A byte changed on the way.
	flip := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		body[len(body)-5]++
		_, _ = w.Write(body)
	}))
	defer flip.Close()
	out.Reset()
	g.Expect(run(context.Background(), []string{"call", "--url", flip.URL + "/", "--count", "1", "--bytes", strconv.Itoa(size)}, &out, nil)).To(Succeed())
	recs, err = datapath.ParseCallRecords(out.String(), 1)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(recs[0].Error).To(ContainSubstring("byte 1048588 of 1048593"))

	g.Expect(run(context.Background(), []string{"call", "--url", srv.URL, "--bytes", "-1"}, &out, nil)).To(MatchError(ContainSubstring("--bytes -1")))
	resp, err := http.Get(srv.URL + "/?bytes=lots")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
}
