package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Key files in a node's state directory. The private key is written once, 0600, and read only
// by the agent of that node; the public key beside it is what the node publishes.
const (
	privateKeyFile = "wireguard.key"
	publicKeyFile  = "wireguard.pub"
)

// LoadOrCreateKey returns the node's private key from stateDir, making one on the first call.
// A key file that others can read is refused rather than used: a leaked private key lets
// anyone impersonate the node on the overlay.
func LoadOrCreateKey(stateDir string) (wgtypes.Key, error) {
	path := filepath.Join(stateDir, privateKeyFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		info, err := os.Stat(path)
		if err != nil {
			return wgtypes.Key{}, err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			return wgtypes.Key{}, fmt.Errorf("private key %s has mode %04o, readable by others: treat it as leaked, delete it and restart the agent to make a new one", path, perm)
		}
		key, err := wgtypes.ParseKey(strings.TrimSpace(string(data)))
		if err != nil {
			return wgtypes.Key{}, fmt.Errorf("private key %s: %w; delete it and restart the agent to make a new one", path, err)
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return wgtypes.Key{}, fmt.Errorf("read private key: %w", err)
	}
	key, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("generate WireGuard key: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return wgtypes.Key{}, fmt.Errorf("create state directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("write private key: %w", err)
	}
	if _, err := f.WriteString(key.String() + "\n"); err != nil {
		f.Close()
		return wgtypes.Key{}, fmt.Errorf("write private key %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return wgtypes.Key{}, fmt.Errorf("write private key %s: %w", path, err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, publicKeyFile), []byte(key.PublicKey().String()+"\n"), 0o644); err != nil {
		return wgtypes.Key{}, fmt.Errorf("write public key: %w", err)
	}
	return key, nil
}
