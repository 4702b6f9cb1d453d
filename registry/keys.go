package registry

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Key files: a private key is PKCS #8 in a "PRIVATE KEY" PEM block, a
// public key PKIX in a "PUBLIC KEY" PEM block, as openssl and cosign write
// ed25519 keys. Make them with inrun keys create.
const (
	PrivateKeyExt = ".key"
	PublicKeyExt  = ".pub"
)

// Signer is a private key that signs proofs.
type Signer struct {
	key ed25519.PrivateKey
}

// PublicKey is a key proofs are verified with.
type PublicKey struct {
	key ed25519.PublicKey
	// Source names where the key came from, for messages.
	Source string
}

// ID is the key's id: the hex sha256 of its PKIX encoding, as DSSE
// signatures name the key that made them.
func (k PublicKey) ID() string {
	der, err := x509.MarshalPKIXPublicKey(k.key)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// Public returns the signer's public key.
func (s *Signer) Public() PublicKey { return PublicKey{key: s.key.Public().(ed25519.PublicKey)} }

// CreateKey makes a new ed25519 key pair and writes it as dir/name.key
// (mode 0600) and dir/name.pub. It never overwrites a key.
func CreateKey(dir, name string) (privPath, pubPath string, err error) {
	if !nameRx.MatchString(name) {
		return "", "", fmt.Errorf("key name %q: use lower-case letters, digits and dashes (such as publisher)", name)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	privPath = filepath.Join(dir, name+PrivateKeyExt)
	pubPath = filepath.Join(dir, name+PublicKeyExt)
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Stat(p); err == nil {
			return "", "", fmt.Errorf("%s already exists; choose another name or remove it first", p)
		}
	}
	if err := writeNew(privPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		os.Remove(privPath)
		return "", "", err
	}
	return privPath, pubPath, nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// LoadSigner reads an ed25519 private key file.
func LoadSigner(path string) (*Signer, error) {
	block, err := readPEM(path, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: not a PKCS #8 private key: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, not an ed25519 key; make one with inrun keys create", path, k)
	}
	return &Signer{key: priv}, nil
}

// LoadPublicKey reads an ed25519 public key file.
func LoadPublicKey(path string) (PublicKey, error) {
	block, err := readPEM(path, "PUBLIC KEY")
	if err != nil {
		return PublicKey{}, err
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%s: not a PKIX public key: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return PublicKey{}, fmt.Errorf("%s: a %T, not an ed25519 key", path, k)
	}
	return PublicKey{key: pub, Source: path}, nil
}

// LoadPublicKeys reads every *.pub file of dir, sorted by name. A missing
// dir holds no keys.
func LoadPublicKeys(dir string) ([]PublicKey, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var keys []PublicKey
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), PublicKeyExt) {
			continue
		}
		k, err := LoadPublicKey(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b PublicKey) int { return strings.Compare(a.Source, b.Source) })
	return keys, errors.Join(errs...)
}

func readPEM(path, typ string) (*pem.Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != typ {
		return nil, fmt.Errorf("%s: no %q PEM block; make keys with inrun keys create", path, typ)
	}
	return block, nil
}
