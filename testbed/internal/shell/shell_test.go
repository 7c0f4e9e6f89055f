package shell

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A cold module cache makes `go list` print "go: downloading …" on stderr; a caller that parses
// the output must see stdout alone (the operator add-on once tried to open "go:/downloading").
func TestOutput_KeepsStderrOutOfTheResult(t *testing.T) {
	out, err := Cmd{Path: "sh", Args: []string{"-c", "echo 'go: downloading x v1' >&2; echo /a/dir file.go"}}.Output(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "/a/dir file.go\n" {
		t.Fatalf("Output = %q, want stdout only", got)
	}
}

func TestOutput_ErrorCarriesStderr(t *testing.T) {
	_, err := Cmd{Path: "sh", Args: []string{"-c", "echo 'no such package' >&2; exit 3"}}.Output(context.Background())
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Error(), "no such package") || !strings.Contains(e.Error(), "exit status 3") {
		t.Fatalf("error = %v, want the command's stderr and exit status", err)
	}
}
