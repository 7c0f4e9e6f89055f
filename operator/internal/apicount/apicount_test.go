package apicount

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A write's body is counted under its method and resource, through client-go as the operator
// sends it; reads are not.
func TestCounter_WriteStatsCountsBodyBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var c Counter
	cs, err := kubernetes.NewForConfig(c.Wrap(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	status := []byte(`{"status":{"phase":"Running"}}`)
	data := []byte(`{"data":{"a":"b"}}`)
	for range 2 {
		if _, err := cs.CoreV1().Pods("x").Patch(ctx, "p", types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("x").Patch(ctx, "c", types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("x").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	got := c.WriteStats()
	want := map[string]WriteStat{
		"PATCH pods/status": {Requests: 2, Bytes: int64(2 * len(status))},
		"PATCH configmaps":  {Requests: 1, Bytes: int64(len(data))},
	}
	if len(got) != len(want) {
		t.Errorf("write stats %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
	c.Reset()
	if n := len(c.WriteStats()); n != 0 {
		t.Errorf("after Reset: %d entries, want none", n)
	}
}
