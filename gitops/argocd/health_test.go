// Package argocd_test runs the Argo CD health checks Polykube ships (health-checks.yaml) with
// the Lua interpreter Argo CD embeds (gopher-lua, the version Argo CD v3.6 pins), over the
// conditions the operator writes. A live Argo CD runs them in the test bed's argocd scenarios.
package argocd_test

import (
	"testing"

	. "github.com/onsi/gomega"
	lua "github.com/yuin/gopher-lua"

	"github.com/polykube/polykube/testbed"
)

// toLua converts a JSON-like value into a Lua value, as Argo CD hands an object to a check.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case int:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	}
	return lua.LNil
}

func runCheck(t *testing.T, script string, obj map[string]any) (string, string) {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		t.Fatalf("the health check does not run: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check returned %s, not a table", L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

func TestHealthChecks_FromTheReadyCondition(t *testing.T) {
	checks, err := testbed.LoadArgoCDHealthChecks("health-checks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	g.Expect(checks).To(HaveKey("resource.customizations.health.polykube.kismet.io_Workload"))
	g.Expect(checks).To(HaveKey("resource.customizations.health.polykube.kismet.io_ServiceEndpoint"))
	g.Expect(checks).To(HaveKey("resource.customizations.health.polykube.kismet.io_DatastoreBinding"))

	ready := func(status, reason string, observed int) map[string]any {
		return map[string]any{"type": "Ready", "status": status, "reason": reason, "message": "m", "observedGeneration": observed}
	}
	obj := func(generation int, conds ...any) map[string]any {
		o := map[string]any{"metadata": map[string]any{"name": "web", "generation": generation}}
		if conds != nil {
			o["status"] = map[string]any{"conditions": conds}
		}
		return o
	}
	tests := []struct {
		name        string
		obj         map[string]any
		wantStatus  string
		wantMessage string
	}{
		{"no status yet", obj(1), "Progressing", "waiting for the Polykube operator"},
		{"other conditions only", obj(1, map[string]any{"type": "Allocated", "status": "True"}), "Progressing", ""},
		{"ready", obj(2, ready("True", "Succeeded", 2)), "Healthy", "Succeeded: m"},
		{"ready for an older generation", obj(3, ready("True", "Succeeded", 2)), "Progressing", "generation 3"},
		{"rolling out", obj(1, ready("False", "Progressing", 1)), "Progressing", "Progressing: m"},
		{"deployment pending", obj(1, ready("False", "DeploymentPending", 1)), "Progressing", ""},
		{"roster still arriving", obj(1, ready("False", "NoTargets", 1)), "Progressing", ""},
		{"conflict", obj(1, ready("False", "Conflict", 1)), "Degraded", "Conflict: m"},
		{"missing secret", obj(1, ready("False", "SecretNotFound", 1)), "Degraded", "SecretNotFound"},
		{"unknown", obj(1, ready("Unknown", "ReconcileFailed", 1)), "Progressing", ""},
	}
	for key, script := range checks {
		for _, tt := range tests {
			t.Run(key[len("resource.customizations.health."):]+"/"+tt.name, func(t *testing.T) {
				status, msg := runCheck(t, script, tt.obj)
				g := NewWithT(t)
				g.Expect(status).To(Equal(tt.wantStatus))
				g.Expect(msg).To(ContainSubstring(tt.wantMessage))
			})
		}
	}
}
