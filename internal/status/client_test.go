package status

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status/fleettest"
)

func TestReader_CannotWrite(t *testing.T) {
	g := NewWithT(t)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}

	r, err := NewReader(cfg, time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	// The Reader the CLI holds has no write methods at all.
	_, isWriter := any(r).(client.Writer)
	g.Expect(isWriter).To(BeFalse(), "the CLI's Reader must not implement client.Writer")
	_, isStatusClient := any(r).(client.StatusClient)
	g.Expect(isStatusClient).To(BeFalse(), "the CLI's Reader must not reach the status subresource")

	// Even a full client built from the CLI's REST config cannot send a write.
	s, err := Scheme()
	g.Expect(err).NotTo(HaveOccurred())
	full, err := client.New(ReadOnlyConfig(cfg, time.Second), client.Options{Scheme: s, Mapper: staticMapper()})
	g.Expect(err).NotTo(HaveOccurred())
	w := &polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}
	ctx := context.Background()
	for name, write := range map[string]func() error{
		"create":       func() error { return full.Create(ctx, w) },
		"update":       func() error { return full.Update(ctx, w) },
		"patch":        func() error { return full.Patch(ctx, w, client.MergeFrom(w.DeepCopy())) },
		"delete":       func() error { return full.Delete(ctx, w) },
		"deleteAllOf":  func() error { return full.DeleteAllOf(ctx, w, client.InNamespace("default")) },
		"statusUpdate": func() error { return full.Status().Update(ctx, w) },
	} {
		g.Expect(write()).To(MatchError(ErrWriteRefused), name)
	}
	g.Expect(requests.Load()).To(BeZero(), "no write request may leave the process")

	// Reads still go out.
	g.Expect(r.List(ctx, &polykubev1alpha1.WorkloadList{})).To(HaveOccurred())
	g.Expect(requests.Load()).To(BeNumerically(">", 0))
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "polykube.kismet.io", Resource: "workloads"}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"refused", context.Background(), fmt.Errorf("get: %w", refused), ReasonUnreachable},
		{"dns", context.Background(), &net.DNSError{Err: "no such host", Name: "x"}, ReasonUnreachable},
		{"deadline", context.Background(), context.DeadlineExceeded, ReasonTimeout},
		{"context expired", expired, errors.New("client rate limiter Wait returned an error"), ReasonTimeout},
		{"server timeout", context.Background(), apierrors.NewTimeoutError("slow", 1), ReasonTimeout},
		{"401", context.Background(), apierrors.NewUnauthorized("expired"), ReasonUnauthorized},
		{"403", context.Background(), apierrors.NewForbidden(gr, "", errors.New("no")), ReasonForbidden},
		{"404 on list", context.Background(), apierrors.NewNotFound(gr, ""), ReasonCRDsMissing},
		{"no match", context.Background(), &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "polykube.kismet.io", Kind: "Workload"}}, ReasonCRDsMissing},
		{"500", context.Background(), apierrors.NewInternalError(errors.New("boom")), ReasonError},
		{"other", context.Background(), errors.New("boom"), ReasonError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Classify(tt.ctx, tt.err)).To(Equal(tt.want))
		})
	}
}

// TestCollect_DeadlinePerCluster: a server that accepts connections and never answers costs
// the timeout and no more, while a fast cluster in the same call is not held up.
func TestCollect_DeadlinePerCluster(t *testing.T) {
	g := NewWithT(t)
	hung := hangingListener(t)
	refused := closedPort(t)
	fast := httptest.NewServer(fleettest.EmptyLists())
	defer fast.Close()

	targets := []Target{
		{Context: "hung", Config: &rest.Config{Host: "https://" + hung}},
		{Context: "refused", Config: &rest.Config{Host: "https://" + refused}},
		{Context: "fast", Config: &rest.Config{Host: fast.URL}},
		{Context: "broken", ConfigErr: errors.New("no credentials")},
	}
	timeout := 700 * time.Millisecond
	start := time.Now()
	snaps := Collect(context.Background(), targets, Query{Timeout: timeout}, nil)
	elapsed := time.Since(start)

	g.Expect(elapsed).To(BeNumerically("<", timeout+time.Second), "parallel queries take about one timeout")
	g.Expect(snaps[0].Reason).To(Equal(ReasonTimeout), "%v", snaps[0].Err)
	g.Expect(snaps[1].Reason).To(Equal(ReasonUnreachable), "%v", snaps[1].Err)
	g.Expect(snaps[2].Err).NotTo(HaveOccurred())
	g.Expect(snaps[3].Reason).To(Equal(ReasonConfigError))
}

// hangingListener accepts TCP connections and never says anything.
func hangingListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
