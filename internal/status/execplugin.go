package status

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// An exec credential plugin (users[].user.exec) is started by client-go with exec.Command: no
// context, no process group, and the process's own stderr (Authenticator.stderr is os.Stderr,
// and neither rest.Config nor the kubeconfig can change it). A plugin that hangs therefore
// cannot be stopped when its cluster's deadline passes, and once polykube-status has given up on
// it and exited, the plugin still holds the caller's stderr: `polykube-status | less` or
// `x=$(polykube-status 2>&1)` waits until the plugin exits, which may be never.
//
// Since client-go offers no hook, polykube-status wraps the plugin: GuardExecPlugins points each
// context's exec command at the polykube-status binary itself, with the real command in the
// environment, and that copy (RunExecShim) starts the real plugin in a process group of its own
// with a stderr of its own (a pipe the shim forwards). The shim ends the plugin's group as soon
// as polykube-status is gone (its parent changes) or is interrupted, so a plugin abandoned at
// the deadline neither outlives the run nor holds the caller's pipes. Its stdout stays the pipe
// client-go reads the ExecCredential from, and its stdin what client-go gave (the terminal only
// when the plugin may be interactive).
const (
	// execShimCommandEnv holds the real plugin command; its presence makes a run a shim.
	execShimCommandEnv = "POLYKUBE_STATUS_EXEC_PLUGIN"
	// execShimParentEnv holds the PID of the polykube-status run the shim serves.
	execShimParentEnv = "POLYKUBE_STATUS_EXEC_PARENT"
)

// ExecShimRequested reports whether this process was started by GuardExecPlugins as the shim
// around an exec credential plugin: main must then call RunExecShim and nothing else.
func ExecShimRequested() bool { return os.Getenv(execShimCommandEnv) != "" }

// RunExecShim runs the exec credential plugin this process stands for (see GuardExecPlugins)
// and returns the exit code to exit with: the plugin's own when it ends by itself.
func RunExecShim() int {
	parent, err := strconv.Atoi(os.Getenv(execShimParentEnv))
	if err != nil {
		parent = os.Getppid()
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, execShimCommandEnv+"=") || strings.HasPrefix(kv, execShimParentEnv+"=")
	})
	return runExecShim(os.Getenv(execShimCommandEnv), os.Args[1:], env, parent)
}

// GuardExecPlugins makes the exec credential plugin of every target run under the shim, which
// is self (the path of the running polykube-status binary). Targets without a plugin, and
// plugins under a client-go plugin policy (the shim would be checked against the allowlist
// instead of the plugin), are left as they are; so is everything on platforms without process
// groups.
func GuardExecPlugins(targets []Target, self string) {
	if !execShimSupported || self == "" {
		return
	}
	for i := range targets {
		cfg := targets[i].Config
		if cfg == nil || cfg.ExecProvider == nil || cfg.ExecProvider.Command == "" {
			continue
		}
		if p := cfg.ExecProvider.PluginPolicy.PolicyType; p != "" && p != clientcmdapi.PluginPolicyAllowAll {
			continue
		}
		ep := *cfg.ExecProvider
		ep.Args = slices.Clone(ep.Args)
		ep.Env = append(slices.Clone(ep.Env),
			clientcmdapi.ExecEnvVar{Name: execShimCommandEnv, Value: ep.Command},
			clientcmdapi.ExecEnvVar{Name: execShimParentEnv, Value: strconv.Itoa(os.Getpid())})
		ep.Command = self
		out := rest.CopyConfig(cfg)
		out.ExecProvider = &ep
		targets[i].Config = out
		targets[i].execShim = self
	}
}

// ExecPluginCommand is the command of cfg's exec credential plugin as the kubeconfig names it,
// also when GuardExecPlugins wrapped it.
func ExecPluginCommand(cfg *rest.Config) string {
	if cfg == nil || cfg.ExecProvider == nil {
		return ""
	}
	for _, e := range cfg.ExecProvider.Env {
		if e.Name == execShimCommandEnv {
			return e.Value
		}
	}
	return cfg.ExecProvider.Command
}

// shimErr names the plugin instead of the shim in client-go's errors about the command it ran
// ("exec: executable /usr/local/bin/polykube-status failed with exit code 1"), keeping the
// error chain for Classify.
type shimErr struct {
	msg string
	err error
}

func (e *shimErr) Error() string { return e.msg }
func (e *shimErr) Unwrap() error { return e.err }

func nameThePlugin(t Target, err error) error {
	if err == nil || t.execShim == "" || !strings.Contains(err.Error(), t.execShim) {
		return err
	}
	return &shimErr{msg: strings.ReplaceAll(err.Error(), t.execShim, ExecPluginCommand(t.Config)), err: err}
}
