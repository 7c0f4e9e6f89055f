package toolchain

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// buildFromModule builds t from Go module source with the least machinery: a scratch module
// under <cache>/work that requires t.Module@t.Version, copies the upstream go.mod's go line,
// godebug settings and module replaces (a `go install m@v` refuses modules with replaces,
// which kubernetes, the Flux controllers and OpenTofu all have), points local replaces at
// published versions, and runs `go build -o out t.Package`. Output goes to
// <cache>/logs/<tool>-<version>.log.
func (tc *Toolchain) buildFromModule(ctx context.Context, t *Tool, out string) error {
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("the go command is not on $PATH (install Go 1.26 or newer): %w", err)
	}
	if err := os.MkdirAll(filepath.Join(tc.dir, "work"), 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Join(tc.dir, "work"), t.Name+"-"+t.Version+"-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	logPath := filepath.Join(tc.dir, "logs", t.Name+"-"+t.Version+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	fail := func(step string, err error) error {
		logFile.Sync()
		tail, _ := os.ReadFile(logPath)
		return fmt.Errorf("%s: %w\n%s\n(full log: %s)", step, err, lastLines(string(tail), 15), logPath)
	}

	// The upstream go.mod, as JSON.
	var dl struct{ Dir, GoMod, Error string }
	stdout, err := runGo(ctx, work, t.env, logFile, "mod", "download", "-json", t.Module+"@"+t.Version)
	_ = json.Unmarshal(stdout, &dl)
	if err != nil || dl.Error != "" {
		if dl.Error != "" {
			err = fmt.Errorf("%s", dl.Error)
		}
		return fail("download module "+t.Module+"@"+t.Version+" through GOPROXY="+goEnv("GOPROXY"), err)
	}
	stdout, err = runGo(ctx, work, t.env, logFile, "mod", "edit", "-json", dl.GoMod)
	if err != nil {
		return fail("read "+dl.GoMod, err)
	}
	var upstream goMod
	if err := json.Unmarshal(stdout, &upstream); err != nil {
		return fail("parse "+dl.GoMod, err)
	}

	if err := writeShims(work, t.shims); err != nil {
		return fail("write the shims", err)
	}
	gomod := scratchGoMod(t, upstream)
	fmt.Fprintf(logFile, "### go.mod\n%s\n", gomod)
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	ldflags := strings.Join(append([]string{"-s", "-w"}, t.ldflags...), " ")
	env := append([]string{"CGO_ENABLED=0", "GOFLAGS=" + withModMod(goEnv("GOFLAGS"))}, t.env...)
	args := []string{"build", "-trimpath", "-ldflags=" + ldflags}
	if len(t.tags) > 0 {
		args = append(args, "-tags="+strings.Join(t.tags, ","))
	}
	if _, err := runGo(ctx, work, env, logFile, append(args, "-o", out, t.Package)...); err != nil {
		return fail("go build "+t.Package, err)
	}
	return nil
}

// goMod is the part of `go mod edit -json` we use.
type goMod struct {
	Go      string
	GoDebug []struct{ Key, Value string }
	Replace []struct {
		Old struct{ Path, Version string }
		New struct{ Path, Version string }
	}
}

// scratchGoMod writes the go.mod of the build module for t from the upstream go.mod.
func scratchGoMod(t *Tool, up goMod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "module polykube.local/toolchain/%s\n\ngo %s\n", t.Name, up.Go)
	if len(up.GoDebug) > 0 {
		b.WriteString("\ngodebug (\n")
		for _, d := range up.GoDebug {
			fmt.Fprintf(&b, "\t%s=%s\n", d.Key, d.Value)
		}
		b.WriteString(")\n")
	}
	fmt.Fprintf(&b, "\nrequire %s %s\n", t.Module, t.Version)

	replaces := map[string]string{} // "old[ version]" -> "new version"
	for _, r := range up.Replace {
		old := strings.TrimSpace(r.Old.Path + " " + r.Old.Version)
		switch {
		case r.New.Version != "": // module => module@version: keep as is
			replaces[old] = r.New.Path + " " + r.New.Version
		case t.localReplace != nil: // module => ./dir: use a published version
			if v := t.localReplace(r.Old.Path); v != "" {
				replaces[old] = r.Old.Path + " " + v
			}
		}
	}
	for path, v := range t.replace {
		for old := range replaces {
			if old == path || strings.HasPrefix(old, path+" ") {
				delete(replaces, old)
			}
		}
		if strings.HasPrefix(v, "./") {
			replaces[path] = v
		} else {
			replaces[path] = path + " " + v
		}
	}
	if len(replaces) > 0 {
		olds := make([]string, 0, len(replaces))
		for old := range replaces {
			olds = append(olds, old)
		}
		sort.Strings(olds)
		b.WriteString("\nreplace (\n")
		for _, old := range olds {
			fmt.Fprintf(&b, "\t%s => %s\n", old, replaces[old])
		}
		b.WriteString(")\n")
	}
	return b.String()
}

// shimFiles are stand-ins for modules the module proxy refuses (see Tool.shims). Their files
// carry a .txt suffix: a go.mod would make the directory a module of its own, which go:embed
// cannot include.
//
//go:embed shims
var shimFiles embed.FS

// writeShims writes the tool's shims into the build module's directory as ./shims/<dir>.
func writeShims(work string, shims map[string]string) error {
	for _, dir := range shims {
		entries, err := shimFiles.ReadDir("shims/" + dir)
		if err != nil {
			return fmt.Errorf("shim %s: %w", dir, err)
		}
		dest := filepath.Join(work, "shims", dir)
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return err
		}
		for _, e := range entries {
			data, err := shimFiles.ReadFile("shims/" + dir + "/" + e.Name())
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dest, strings.TrimSuffix(e.Name(), ".txt")), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// runGo runs the go command in dir with extra environment, writing the command line and
// its stderr to log, and returns its stdout. GOPROXY, GOMODCACHE, GOCACHE and the rest are
// inherited; a go.work around the cache must not apply.
func runGo(ctx context.Context, dir string, env []string, log io.Writer, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOWORK=off"}, env...)...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = log
	// Cancel the whole process group: go runs compilers and linkers as children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	fmt.Fprintf(log, "### (cd %s && %sgo %s)\n", dir, shellEnv(env), strings.Join(args, " "))
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return stdout.Bytes(), err
}

// withModMod returns GOFLAGS with -mod=mod instead of any other -mod setting, so the scratch
// module may add go.sum entries.
func withModMod(goflags string) string {
	flags := slices.DeleteFunc(strings.Fields(goflags), func(f string) bool { return strings.HasPrefix(f, "-mod=") })
	return strings.Join(append(flags, "-mod=mod"), " ")
}

// goEnv returns a go environment setting (`go env NAME`), falling back to the process
// environment when the go command is not available.
func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return os.Getenv(name)
	}
	return strings.TrimSpace(string(out))
}

// shellEnv renders env assignments for a log line a user can paste into a shell.
func shellEnv(env []string) string {
	var b strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(v, " \t'\"$") {
			v = "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
		}
		b.WriteString(k + "=" + v + " ")
	}
	return b.String()
}
