package overlay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// peerFileEntry is one peer in a peer file, with the key in WireGuard's base64 form.
type peerFileEntry struct {
	Member     string         `json:"member"`
	PublicKey  string         `json:"publicKey"`
	Endpoint   string         `json:"endpoint"`
	AllowedIPs []netip.Prefix `json:"allowedIPs"`
}

// WritePeerFile writes peers where an agent started with that peer file reads them.
func WritePeerFile(path string, peers []Peer) error {
	entries := make([]peerFileEntry, 0, len(peers))
	for _, p := range peers {
		entries = append(entries, peerFileEntry{Member: p.Member, PublicKey: p.PublicKey.String(), Endpoint: p.Endpoint, AllowedIPs: p.AllowedIPs})
	}
	data, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write peer file: %w", err)
	}
	return os.Rename(tmp, path)
}

// ReadPeerFile reads a peer file; a file that does not exist yet is no peers.
func ReadPeerFile(path string) ([]Peer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read peer file: %w", err)
	}
	var entries []peerFileEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("peer file %s: %w; it holds a JSON list of {member, publicKey, endpoint, allowedIPs}", path, err)
	}
	peers := make([]Peer, 0, len(entries))
	for _, e := range entries {
		key, err := wgtypes.ParseKey(e.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("peer file %s: member %s: public key: %w", path, e.Member, err)
		}
		peers = append(peers, Peer{Member: e.Member, PublicKey: key, Endpoint: e.Endpoint, AllowedIPs: e.AllowedIPs})
	}
	return peers, nil
}

// Serve runs the agent of one node until ctx ends: it brings the interface up, applies the peer
// file, and applies it again each time reload receives (the add-on rewrites the file from the
// roster and signals the agent). The interface is removed on return.
func Serve(ctx context.Context, cfg Config, peerFile string, reload <-chan os.Signal) error {
	a, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	apply := func() error {
		peers, err := ReadPeerFile(peerFile)
		if err != nil {
			return err
		}
		return a.SetPeers(ctx, peers)
	}
	if err := apply(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-reload:
			// A bad peer file keeps the peers the agent has: cutting every peer off because
			// one entry is wrong would turn a typo into a partition.
			if err := apply(); err != nil {
				fmt.Fprintf(logOf(cfg), "overlay %s: peer file not applied, keeping the previous peers: %v\n", cfg.Interface, err)
			}
		}
	}
}
