package release

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// A release built with a signing key (make release VERSION=… SIGN_KEY=cosign.key) holds cosign
// signatures of the operator image index and of the Flux artifact, key-based, as
// `cosign sign --key cosign.key --upload=false --output-payload … --output-signature …` writes
// them: the simple-signing payload naming the digest, and its base64 signature. make publish
// attaches them in the registry as cosign does (the sha256-<digest>.sig tag beside the image),
// which is where Flux's OCIRepository (spec.verify.provider: cosign) and `cosign verify --key`
// look. Signing happens offline at release time; the registry is only written at publish.

// SignatureDir holds the payloads and signatures, and PublicKeyFile the public key that verifies
// them (the content of a Flux verify Secret's cosign.pub).
const (
	SignatureDir  = "signatures"
	PublicKeyFile = "cosign.pub"
)

// Signature file prefixes, relative to Dist: <prefix>.payload and <prefix>.sig.
const (
	imageSignature  = SignatureDir + "/operator-image"
	gitopsSignature = SignatureDir + "/gitops"
)

// PasswordEnv is the variable that holds the signing key's password, as for the cosign CLI.
const PasswordEnv = "COSIGN_PASSWORD"

// LoadSigner reads a cosign private key (the encrypted PEM of `cosign generate-key-pair`), with
// the password of PasswordEnv when password is nil.
func LoadSigner(path string, password []byte) (signature.SignerVerifier, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("SIGN_KEY=%s: %w (give the private key of cosign generate-key-pair)", path, err)
	}
	if password == nil {
		password = []byte(os.Getenv(PasswordEnv))
	}
	sv, err := cosign.LoadPrivateKey(data, password, nil)
	if err != nil {
		return nil, fmt.Errorf("SIGN_KEY=%s: %w (it must be a cosign private key; set %s to its password, empty if it has none)", path, err, PasswordEnv)
	}
	return sv, nil
}

// sign writes the signatures of the image index and of the Flux artifact, and the public key.
func (b *build) sign(_ context.Context) (string, error) {
	sv, err := LoadSigner(b.SignKey, b.SignKeyPassword)
	if err != nil {
		return "", err
	}
	pub, err := sv.PublicKey()
	if err != nil {
		return "", err
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(b.Dist, SignatureDir), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(b.Dist, PublicKeyFile), pem, 0o644); err != nil {
		return "", err
	}
	for _, s := range []struct{ ref, prefix string }{
		{b.Repository + "@" + b.res.IndexDigest, imageSignature},
		{GitopsRepository(b.Repository) + "@" + b.res.GitopsDigest, gitopsSignature},
	} {
		if err := signDigest(sv, s.ref, filepath.Join(b.Dist, filepath.FromSlash(s.prefix))); err != nil {
			return "", fmt.Errorf("sign %s: %w", s.ref, err)
		}
	}
	return "image and artifact signed, " + PublicKeyFile + " verifies them", nil
}

// signDigest writes prefix.payload, the simple-signing payload of ref (repository@digest), and
// prefix.sig, its base64 signature.
func signDigest(sv signature.Signer, ref, prefix string) error {
	d, err := name.NewDigest(ref)
	if err != nil {
		return err
	}
	body, err := payload.Cosign{Image: d}.MarshalJSON()
	if err != nil {
		return err
	}
	sig, err := sv.SignMessage(bytes.NewReader(body))
	if err != nil {
		return err
	}
	if err := os.WriteFile(prefix+".payload", body, 0o644); err != nil {
		return err
	}
	return os.WriteFile(prefix+".sig", []byte(base64.StdEncoding.EncodeToString(sig)), 0o644)
}

// signed reports whether the release in dist holds signatures (it was built with a key).
func signed(dist string) (bool, error) {
	_, err := os.Stat(filepath.Join(dist, PublicKeyFile))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// checkSignature verifies prefix's signature with dist's public key, and that its payload names
// digest: make publish refuses to attach a signature that would not verify.
func checkSignature(dist, prefix, digest string) (payloadBytes []byte, b64sig string, err error) {
	pemBytes, err := os.ReadFile(filepath.Join(dist, PublicKeyFile))
	if err != nil {
		return nil, "", err
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", PublicKeyFile, err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, "", err
	}
	base := filepath.Join(dist, filepath.FromSlash(prefix))
	if payloadBytes, err = os.ReadFile(base + ".payload"); err != nil {
		return nil, "", err
	}
	sigBytes, err := os.ReadFile(base + ".sig")
	if err != nil {
		return nil, "", err
	}
	b64sig = strings.TrimSpace(string(sigBytes))
	raw, err := base64.StdEncoding.DecodeString(b64sig)
	if err != nil {
		return nil, "", fmt.Errorf("%s.sig is not base64: %w", prefix, err)
	}
	if err := v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(payloadBytes)); err != nil {
		return nil, "", fmt.Errorf("%s.sig does not verify with %s: %w", prefix, PublicKeyFile, err)
	}
	var p payload.Cosign
	if err := p.UnmarshalJSON(payloadBytes); err != nil {
		return nil, "", fmt.Errorf("%s.payload: %w", prefix, err)
	}
	if got := p.Image.DigestStr(); got != digest {
		return nil, "", fmt.Errorf("%s.payload signs %s, not the release's %s", prefix, got, digest)
	}
	return payloadBytes, b64sig, nil
}

// attachSignature pushes prefix's signature for ref, as `cosign attach signature` does: a
// signature image tagged sha256-<digest>.sig in ref's repository, keeping any already there.
func attachSignature(dist, prefix string, ref name.Digest, remoteOpts []remote.Option) error {
	body, b64sig, err := checkSignature(dist, prefix, ref.DigestStr())
	if err != nil {
		return fmt.Errorf("the release's signature of %s: %w; rebuild the release with SIGN_KEY", ref, err)
	}
	sig, err := static.NewSignature(body, b64sig)
	if err != nil {
		return err
	}
	opts := []ociremote.Option{ociremote.WithRemoteOptions(remoteOpts...)}
	se, err := ociremote.SignedEntity(ref, opts...)
	if err != nil {
		return fmt.Errorf("read %s to sign it: %w", ref, err)
	}
	se, err = mutate.AttachSignatureToEntity(se, sig)
	if err != nil {
		return err
	}
	if err := ociremote.WriteSignatures(ref.Context(), se, opts...); err != nil {
		return fmt.Errorf("push the signature of %s: %w", ref, err)
	}
	return nil
}
