package install

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// ImageEntrypoint is where the image keeps the inrun binary, and runs it.
const ImageEntrypoint = "/inrun"

// ImageUser is the image's user and group: not root, as the Deployment's
// securityContext says.
const ImageUser = "65532:65532"

// ImageCACertificates is where the image keeps the CA certificates, where
// Go's crypto/x509 looks first on Linux.
const ImageCACertificates = "/etc/ssl/certs/ca-certificates.crt"

// Image makes an OCI image of an inrun binary, without Docker: one layer
// holding the binary as ImageEntrypoint, the CA certificates as
// ImageCACertificates (so that the runtime verifies a remote reconciler
// or a registry over HTTPS) and an empty /tmp, run as ImageUser. The
// binary must be a statically linked Linux executable (CGO_ENABLED=0
// GOOS=linux go build ./cmd/inrun): the image has no C library, nor
// anything else. The same binary always gives the same digest: every time
// in the image is the zero time, and the certificates are those this
// inrun was built with.
func Image(binary string) (v1.Image, error) {
	arch, err := staticLinux(binary)
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{ImageCACertificates[1:], 0o644, CACertificates()},
		{ImageEntrypoint[1:], 0o755, bin},
	} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.Entrypoint = []string{ImageEntrypoint}
	cfg.Config.User = ImageUser
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"HOME=/tmp"}
	return mutate.ConfigFile(img, cfg)
}

// CACertificates returns the root certificates of Mozilla's trust store
// (NSS), as PEM, from golang.org/x/crypto/x509roots/fallback: the version
// go.mod names, not the build machine's, so that the image is the same
// wherever it is made. The roots Mozilla distrusts after a date are left
// out: a PEM file cannot say so.
func CACertificates() []byte {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}) // writes to memory
	}
	return buf.Bytes()
}

// staticLinux returns the GOARCH of a statically linked Linux executable,
// and an error naming the fix for anything else.
func staticLinux(binary string) (string, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return "", fmt.Errorf("%s is not a Linux executable (%v): build inrun with CGO_ENABLED=0 GOOS=linux go build ./cmd/inrun", binary, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s is dynamically linked, and the image has no C library: build it with CGO_ENABLED=0", binary)
		}
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	}
	return "", fmt.Errorf("%s is for %v: build it for amd64 or arm64", binary, f.Machine)
}

// Push pushes img to ref (REGISTRY/REPOSITORY:TAG) and returns its
// digest. A loopback registry is reached over plain HTTP, any other over
// HTTPS; credentials come from the Docker config, as docker login writes
// it.
func Push(ctx context.Context, img v1.Image, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	if _, ok := r.(name.Tag); !ok {
		return v1.Hash{}, errors.New("push to a tag: REGISTRY/REPOSITORY:TAG")
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}
