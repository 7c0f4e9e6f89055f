package harness

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/polykube/polykube/testbed/incluster"
	"github.com/polykube/polykube/testbed/topology"
)

const (
	ownImage     = "172.18.0.1:5000/polykube/polykube@sha256:own"
	releaseImage = "172.18.0.1:5000/polykube/operator@sha256:release"
)

// operatorDeploymentOf is an operator Deployment of two replicas naming image, its status as
// given.
func operatorDeploymentOf(image string, st appsv1.DeploymentStatus) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: operatorDeployment, Generation: 3},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: operatorContainer, Image: image}}}},
		},
		Status: st,
	}
}

var rolledOutStatus = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}

// runningPod is a running pod of image, ready or not, its container's status as given.
func runningPod(name, image string, ready bool, cs corev1.ContainerStatus) corev1.Pod {
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	cs.Name, cs.Ready = operatorContainer, ready
	if cs.Image == "" {
		cs.Image = image
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: operatorContainer, Image: image}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}},
			ContainerStatuses: []corev1.ContainerStatus{cs},
		},
	}
}

func pulled(imageID string) corev1.ContainerStatus { return corev1.ContainerStatus{ImageID: imageID} }

// A rollout is over when both replicas of the new template are ready and run its image by the
// digest it names, as the kubelet pulled it; not while an old pod still runs, a new one is not
// ready, or a pod runs another digest.
func TestRolledOut(t *testing.T) {
	newPod := func(name string) corev1.Pod {
		return runningPod(name, releaseImage, true, pulled("172.18.0.1:5000/polykube/operator@sha256:release"))
	}
	for _, tc := range []struct {
		name   string
		d      *appsv1.Deployment
		pods   []corev1.Pod
		digest string
		want   string // "" when rolled out, else a part of the error
	}{
		{"done", operatorDeploymentOf(releaseImage, rolledOutStatus), []corev1.Pod{newPod("a"), newPod("b")}, "sha256:release", ""},
		{"done, no digest asked", operatorDeploymentOf(releaseImage, rolledOutStatus), []corev1.Pod{newPod("a"), newPod("b")}, "", ""},
		{"the template names another digest", operatorDeploymentOf(ownImage, rolledOutStatus), []corev1.Pod{newPod("a"), newPod("b")}, "sha256:release", "not the digest sha256:release"},
		{"generation not observed", operatorDeploymentOf(releaseImage, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}),
			[]corev1.Pod{newPod("a"), newPod("b")}, "sha256:release", "rolling out"},
		{"an old pod left", operatorDeploymentOf(releaseImage, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 2}),
			[]corev1.Pod{newPod("a"), newPod("b"), runningPod("old", ownImage, true, pulled(ownImage))}, "sha256:release", "rolling out"},
		{"a pod not ready yet", operatorDeploymentOf(releaseImage, rolledOutStatus),
			[]corev1.Pod{newPod("a"), runningPod("b", releaseImage, false, pulled(releaseImage))}, "sha256:release", "1 of 2 pods ready"},
		{"a pod pulled another digest", operatorDeploymentOf(releaseImage, rolledOutStatus),
			[]corev1.Pod{newPod("a"), runningPod("b", releaseImage, true, pulled("172.18.0.1:5000/polykube/operator@sha256:other"))}, "", "not the digest sha256:release its Deployment names"},
		{"an image by tag: no digest to check", operatorDeploymentOf("polykube.local/polykube:e2e", rolledOutStatus),
			[]corev1.Pod{runningPod("a", "polykube.local/polykube:e2e", true, pulled("sha256:x")), runningPod("b", "polykube.local/polykube:e2e", true, pulled("sha256:x"))}, "", ""},
	} {
		err := rolledOut(tc.d, tc.pods, tc.digest)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: rolledOut = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: rolledOut = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// The pods that ran before are kept when each still runs ready with its UID and image; a pod
// gone, restarted into another image or no longer ready is not kept, nor is a record of none.
func TestPodsKept(t *testing.T) {
	before := readyPods([]corev1.Pod{
		runningPod("a", ownImage, true, pulled(ownImage)),
		runningPod("b", ownImage, true, pulled(ownImage)),
	})
	if len(before) != 2 {
		t.Fatalf("readyPods = %v, want both", before)
	}
	refused := runningPod("new", releaseImage, false, corev1.ContainerStatus{RestartCount: 3})
	if err := podsKept(before, readyPods([]corev1.Pod{runningPod("a", ownImage, true, pulled(ownImage)), runningPod("b", ownImage, true, pulled(ownImage)), refused})); err != nil {
		t.Errorf("both old pods run beside a refused one: podsKept = %v, want nil", err)
	}
	for _, tc := range []struct {
		name string
		now  []corev1.Pod
		want string
	}{
		{"one replaced", []corev1.Pod{runningPod("a", ownImage, true, pulled(ownImage)), runningPod("c", releaseImage, true, pulled(releaseImage))}, "the operator pod b (uid uid-b"},
		{"one not ready", []corev1.Pod{runningPod("a", ownImage, true, pulled(ownImage)), runningPod("b", ownImage, false, pulled(ownImage))}, "no longer runs ready"},
		{"another image", []corev1.Pod{runningPod("a", ownImage, true, pulled(ownImage)), runningPod("b", ownImage, true, pulled(releaseImage))}, "runs b (uid uid-b, image " + ownImage + ", imageID " + releaseImage},
	} {
		if err := podsKept(before, readyPods(tc.now)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: podsKept = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if err := podsKept(nil, before); err == nil {
		t.Error("podsKept(nil, …) = nil: with nothing recorded before, nothing is shown kept")
	}
}

// The refused pod is a new pod of the Deployment's template whose container exited with a
// failure: its log is the current run's while it is terminated, the previous run's once it
// was restarted; not an old pod, one of another template, one that exited 0, nor one still
// starting.
func TestRefusedPod(t *testing.T) {
	d := operatorDeploymentOf(releaseImage, appsv1.DeploymentStatus{})
	old := runningPod("old", ownImage, true, pulled(ownImage))
	before := readyPods([]corev1.Pod{old})
	exited := func(code int32) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}
	}
	terminated := runningPod("t", releaseImage, false, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exited(1)}})
	crashLooping := runningPod("c", releaseImage, false, corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: exited(1)}, RestartCount: 2,
	})
	starting := runningPod("s", releaseImage, false, corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
	exitedZero := runningPod("z", releaseImage, false, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exited(0)}})
	otherTemplate := runningPod("o", ownImage, false, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exited(1)}})

	if p, previous, ok := refusedPod(d, []corev1.Pod{old, starting, terminated}, before); !ok || p.Name != "t" || previous {
		t.Errorf("a terminated new pod: refusedPod = %s previous %t ok %t, want t, its current log", p.Name, previous, ok)
	}
	if p, previous, ok := refusedPod(d, []corev1.Pod{old, crashLooping}, before); !ok || p.Name != "c" || !previous {
		t.Errorf("a crash-looping new pod: refusedPod = %s previous %t ok %t, want c, its previous log", p.Name, previous, ok)
	}
	if p, _, ok := refusedPod(d, []corev1.Pod{old, starting, exitedZero, otherTemplate}, before); ok {
		t.Errorf("no new pod of the template exited with a failure, yet refusedPod found %s", p.Name)
	}
	oldExited := runningPod("old", releaseImage, false, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: exited(1)}})
	if p, _, ok := refusedPod(d, []corev1.Pod{oldExited}, before); ok {
		t.Errorf("a pod recorded before is not the new operator, yet refusedPod found %s", p.Name)
	}
}

// On the in-cluster bed of topology-kind.yaml the install scenarios take the path of operators
// that run in the clusters (the bed swaps no operator binary) and publish to the bed's own
// registry, whose address is the one its nodes' containerd trusts (here, in a dry run, not yet
// started: the scenario says so rather than pushing elsewhere).
func TestInstallOnTheInClusterBed_OperatorsInPodsAndTheBedsRegistry(t *testing.T) {
	g := NewWithT(t)
	top, err := topology.Load("../../topology-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(top.HasAddon(topology.AddonRegistry)).To(BeTrue(), "topology-kind.yaml runs the registry the install scenarios publish to")
	var out bytes.Buffer
	b, err := incluster.Open(incluster.Options{Topology: top, Dir: "/run/scenarios-kind", SourceDir: "../../..", DryRun: true, Log: &out})
	g.Expect(err).NotTo(HaveOccurred())
	sc := &Scenario{Suite: &Suite{Fed: newBedFederation(b)}}
	_, host := sc.hostOperators()
	g.Expect(host).To(BeFalse(), "the in-cluster bed's operators are the Deployment's pods")
	_, err = sc.registryAddr()
	g.Expect(err).To(MatchError(ContainSubstring("the run's registry has not started")))
}
