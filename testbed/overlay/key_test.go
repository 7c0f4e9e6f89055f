package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadOrCreateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	key, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, privateKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode %04o, want 0600", info.Mode().Perm())
	}
	pub, err := os.ReadFile(filepath.Join(dir, publicKeyFile))
	if err != nil || strings.TrimSpace(string(pub)) != key.PublicKey().String() {
		t.Fatalf("public key file %q (%v), want %s", pub, err, key.PublicKey())
	}
	again, err := LoadOrCreateKey(dir)
	if err != nil || again != key {
		t.Fatalf("second call: %v, key changed %v; a node keeps its key across restarts", err, again != key)
	}
	if err := os.Chmod(filepath.Join(dir, privateKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(dir); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("world-readable key: err %v, want a refusal", err)
	}
}
