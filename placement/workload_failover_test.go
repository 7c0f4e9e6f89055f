package placement

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func TestFailoverFromWorkload(t *testing.T) {
	pct := intstr.FromString("50%")
	three := intstr.FromInt32(3)
	bad := intstr.FromString("half")
	cases := []struct {
		name    string
		f       *polykubev1alpha1.Failover
		want    FailoverConfig
		ok, err bool
	}{
		{name: "unset", f: nil},
		{name: "defaults", f: &polykubev1alpha1.Failover{}, ok: true,
			want: FailoverConfig{Timing: FailoverTiming{DetectAfter: 2 * time.Minute, ReturnAfter: 10 * time.Minute}, MaxSurge: SurgePercent(100), HandoverTimeout: 10 * time.Minute}},
		{name: "set", ok: true,
			f: &polykubev1alpha1.Failover{DetectAfter: &metav1.Duration{Duration: 5 * time.Second},
				ReturnAfter: &metav1.Duration{Duration: 7 * time.Second}, MaxSurge: &three, HandoverTimeout: &metav1.Duration{}},
			want: FailoverConfig{Timing: FailoverTiming{DetectAfter: 5 * time.Second, ReturnAfter: 7 * time.Second}, MaxSurge: SurgeReplicas(3)}},
		{name: "percent", ok: true, f: &polykubev1alpha1.Failover{MaxSurge: &pct},
			want: FailoverConfig{Timing: FailoverTiming{DetectAfter: 2 * time.Minute, ReturnAfter: 10 * time.Minute}, MaxSurge: SurgePercent(50), HandoverTimeout: 10 * time.Minute}},
		{name: "bad surge", ok: true, err: true, f: &polykubev1alpha1.Failover{MaxSurge: &bad}},
		{name: "zero duration", ok: true, err: true, f: &polykubev1alpha1.Failover{DetectAfter: &metav1.Duration{}}},
		{name: "negative handover timeout", ok: true, err: true, f: &polykubev1alpha1.Failover{HandoverTimeout: &metav1.Duration{Duration: -time.Second}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &polykubev1alpha1.Workload{}
			w.Spec.Distribution.Failover = c.f
			got, ok, err := FailoverFromWorkload(w)
			if ok != c.ok || (err != nil) != c.err {
				t.Fatalf("ok=%t err=%v, want ok=%t err=%t", ok, err, c.ok, c.err)
			}
			if !c.err && got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestMaxSurgeOf(t *testing.T) {
	for in, want := range map[string]MaxSurge{"0": SurgeReplicas(0), "4": SurgeReplicas(4), "100%": SurgePercent(100), "0%": SurgePercent(0)} {
		if got, err := MaxSurgeOf(intstr.Parse(in)); err != nil || got != want {
			t.Errorf("MaxSurgeOf(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "x%", "1.5%", "-3%"} {
		if _, err := MaxSurgeOf(intstr.Parse(in)); err == nil {
			t.Errorf("MaxSurgeOf(%q) accepted", in)
		}
	}
}

// The status keeps StepFailover's state: reading back what was written gives the same state,
// for times in whole seconds (what metav1.Time keeps).
func TestFailoverStatus_RoundTripsTheState(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	timing := FailoverTiming{DetectAfter: 10 * time.Second, ReturnAfter: 30 * time.Second}
	var s FailoverState
	steps := []Deficits{{"a": 3}, {"a": 3, "b": 1}, {"a": 2, "b": 1}, {"a": 2}, {}, {"b": 2}}
	for i, obs := range steps {
		s = StepFailover(s, t0.Add(time.Duration(i)*7*time.Second), obs, timing)
		st := FailoverStatusOf(s, Failover{Base: 3, Extra: 1, Replicas: 4})
		back := FailoverStateFromStatus(st.DeepCopy())
		if len(s.Peers) == 0 && len(back.Peers) == 0 {
			continue
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("step %d: state %+v came back as %+v", i, s, back)
		}
	}
	if !s.Active() && len(s.Peers) == 0 {
		t.Fatal("the steps ended with no state; the test checks nothing")
	}
}

func TestSpecHash_CoversFailover(t *testing.T) {
	w := polykubev1alpha1.WorkloadSpec{Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyStatic}}
	with := *w.DeepCopy()
	with.Distribution.Failover = &polykubev1alpha1.Failover{}
	if SpecHash(w) == SpecHash(with) {
		t.Error("failover does not change the spec hash")
	}
}
