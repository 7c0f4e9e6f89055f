package release

import (
	"context"
	"crypto"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// testKey writes a cosign key pair (as cosign generate-key-pair does) into dir and returns the
// private key's path and the verifier of its public key.
func testKey(t *testing.T, dir, password string) (string, signature.Verifier) {
	t.Helper()
	g := NewWithT(t)
	keys, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(password), nil })
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "cosign.key")
	g.Expect(os.WriteFile(path, keys.PrivateBytes, 0o600)).To(Succeed())
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(keys.PublicBytes)
	g.Expect(err).NotTo(HaveOccurred())
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	g.Expect(err).NotTo(HaveOccurred())
	return path, v
}

// verifyAsFlux verifies ref's cosign signatures with a public key as Flux's source-controller
// does for an OCIRepository with spec.verify.secretRef (key-based, offline, no transparency log).
func verifyAsFlux(ref name.Reference, v signature.Verifier) error {
	_, _, err := cosign.VerifyImageSignatures(context.Background(), ref, &cosign.CheckOpts{
		SigVerifier: v, Offline: true, IgnoreTlog: true,
		RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(remote.WithContext(context.Background()))},
	})
	return err
}

func TestSignatures_VerifyAsFluxDoes(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repository := strings.TrimPrefix(srv.URL, "http://") + "/polykube/operator"

	// An image index and an artifact in the registry, standing for a published release.
	idx, err := random.Index(64, 1, 2)
	g.Expect(err).NotTo(HaveOccurred())
	idxDigest, err := idx.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	idxRef, err := name.NewDigest(repository+"@"+idxDigest.String(), name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.WriteIndex(idxRef, idx)).To(Succeed())
	art, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())
	artDigest, err := art.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	artRef, err := name.NewDigest(GitopsRepository(repository)+"@"+artDigest.String(), name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(artRef, art)).To(Succeed())

	keyDir := t.TempDir()
	key, trusted := testKey(t, keyDir, "s3cret")
	_, other := testKey(t, t.TempDir(), "")

	// Unsigned, Flux refuses both.
	g.Expect(verifyAsFlux(idxRef, trusted)).To(HaveOccurred())

	dist := t.TempDir()
	b := &build{Options: Options{Dist: dist, Repository: repository, SignKey: key, SignKeyPassword: []byte("s3cret")},
		res: Result{IndexDigest: idxDigest.String(), GitopsDigest: artDigest.String()}}
	_, err = b.sign(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range []string{PublicKeyFile, imageSignature + ".payload", imageSignature + ".sig", gitopsSignature + ".payload", gitopsSignature + ".sig"} {
		g.Expect(filepath.Join(dist, f)).To(BeARegularFile())
	}

	g.Expect(attachSignature(dist, imageSignature, idxRef, nil)).To(Succeed())
	g.Expect(attachSignature(dist, gitopsSignature, artRef, nil)).To(Succeed())

	// The key's public half verifies both as Flux does; another key verifies neither.
	g.Expect(verifyAsFlux(idxRef, trusted)).To(Succeed())
	g.Expect(verifyAsFlux(artRef, trusted)).To(Succeed())
	g.Expect(verifyAsFlux(idxRef, other)).To(HaveOccurred())
	g.Expect(verifyAsFlux(artRef, other)).To(HaveOccurred())

	// The release's cosign.pub is that public key.
	pemBytes, err := os.ReadFile(filepath.Join(dist, PublicKeyFile))
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	g.Expect(err).NotTo(HaveOccurred())
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(verifyAsFlux(artRef, v)).To(Succeed())

	// A signature of one digest is not attached to another, and a tampered payload is not
	// attached at all.
	err = attachSignature(dist, imageSignature, artRef, nil)
	g.Expect(err).To(MatchError(ContainSubstring("not the release's " + artDigest.String())))
	payloadFile := filepath.Join(dist, imageSignature+".payload")
	body, err := os.ReadFile(payloadFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(body)).To(ContainSubstring("polykube/operator"))
	g.Expect(os.WriteFile(payloadFile, []byte(strings.Replace(string(body), "polykube/operator", "polykube/operatoR", 1)), 0o644)).To(Succeed())
	err = attachSignature(dist, imageSignature, idxRef, nil)
	g.Expect(err).To(MatchError(ContainSubstring("does not verify with " + PublicKeyFile)))
}

func TestLoadSigner_SaysWhatIsWrong(t *testing.T) {
	g := NewWithT(t)
	key, _ := testKey(t, t.TempDir(), "right")
	_, err := LoadSigner(key, []byte("wrong"))
	g.Expect(err).To(MatchError(And(ContainSubstring("SIGN_KEY="+key), ContainSubstring("set "+PasswordEnv))))
	_, err = LoadSigner(filepath.Join(t.TempDir(), "absent.key"), nil)
	g.Expect(err).To(MatchError(ContainSubstring("give the private key of cosign generate-key-pair")))
	_, err = LoadSigner(key, []byte("right"))
	g.Expect(err).NotTo(HaveOccurred())
}
