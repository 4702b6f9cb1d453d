package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tokens are bearer tokens, each kept in a Secret of the gateway's
// namespace that holds only its hash, its name, its scopes and its expiry.
// A token is shown once, when it is made; it reads
// inrun_<id>_<secret>, where the id names its Secret and the secret is 32
// random bytes.
type Tokens struct {
	// Client reads and writes the Secrets. Required.
	Client client.Client
	// Namespace holds the Secrets. Required.
	Namespace string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Labels and keys of a token's Secret.
const (
	// LabelToken marks the Secrets that hold tokens.
	LabelToken = "gateway.inrun.dev/token"
	// SecretType is the type of a token's Secret.
	SecretType   corev1.SecretType = "inrun.dev/gateway-token"
	keyHash                        = "sha256"
	keyName                        = "name"
	keyScopes                      = "scopes"
	keyExpires                     = "expires"
	keyCreated                     = "created"
	keyRevoked                     = "revoked"
	keyLifetime                    = "lifetime"
	keyRotatedTo                   = "rotated-to"
	tokenPre                       = "inrun_"
)

// TokenInfo describes a token, never its secret.
type TokenInfo struct {
	// ID names the token (and its Secret, inrun-token-<id>).
	ID string `json:"id"`
	// Name is whose token it is: a person, a pipeline. The intents it makes
	// are labelled with it, and audit lines name it.
	Name    string     `json:"name"`
	Scopes  []string   `json:"scopes"`
	Created time.Time  `json:"created"`
	Expires *time.Time `json:"expires,omitempty"`
	Revoked *time.Time `json:"revoked,omitempty"`
	// Lifetime is the --ttl it was made with, zero for none: what a
	// rotation gives its successor, whatever the grace did to Expires.
	Lifetime time.Duration `json:"lifetime,omitempty"`
	// RotatedTo is the id of the token it was rotated into.
	RotatedTo string `json:"rotatedTo,omitempty"`
}

// State says whether the token is active, expired or revoked at now.
func (i *TokenInfo) State(now time.Time) string {
	switch {
	case i.Revoked != nil:
		return "revoked"
	case i.Expires != nil && !now.Before(*i.Expires):
		return "expired"
	}
	return "active"
}

// Caller is who sent a request: an authenticated token.
type Caller struct {
	TokenID string
	Name    string
	Scopes  []string
}

// Authenticator turns the Authorization header's bearer token into a
// Caller, or a 401 Problem that says what to do.
type Authenticator interface {
	Authenticate(ctx context.Context, bearer string) (*Caller, *Problem)
}

var _ Authenticator = (*Tokens)(nil)

var (
	tokenIDRE   = regexp.MustCompile(`^[a-z0-9]{10}$`)
	tokenNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)
	scopeNameRE = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
	b32         = base32.StdEncoding.WithPadding(base32.NoPadding)
)

// CreateOptions describe a token to make.
type CreateOptions struct {
	// Name is whose token it is, such as ci or alice. Required.
	Name string
	// Scopes the token carries; Blueprints' serve.tokens grant them verbs.
	Scopes []string
	// TTL, when positive, makes the token expire that long after now.
	TTL time.Duration
}

func (t *Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC()
	}
	return time.Now().UTC()
}

// Create makes a token and returns it, the one time it is shown, with its
// description.
func (t *Tokens) Create(ctx context.Context, opts CreateOptions) (string, *TokenInfo, error) {
	if !tokenNameRE.MatchString(opts.Name) {
		return "", nil, fmt.Errorf("token name %q: use lower-case letters, digits, '.', '_' and '-', such as ci or alice", opts.Name)
	}
	if len(opts.Scopes) == 0 {
		return "", nil, errors.New("give the token at least one scope (--scope): the Blueprints' serve.tokens grant verbs to scopes")
	}
	if opts.TTL < 0 {
		return "", nil, fmt.Errorf("--ttl %s is negative: give how long the token lives, such as 720h, or leave it out for a token that never expires", opts.TTL)
	}
	for _, s := range opts.Scopes {
		if !scopeNameRE.MatchString(s) {
			return "", nil, fmt.Errorf("scope %q: use lower-case letters, digits and '-', as in deploy", s)
		}
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, err
	}
	secret := strings.ToLower(b32.EncodeToString(raw[:]))
	now := t.now().Truncate(time.Second)
	info := &TokenInfo{Name: opts.Name, Scopes: sortedUnique(opts.Scopes), Created: now}
	if opts.TTL > 0 {
		exp := now.Add(opts.TTL)
		info.Expires = &exp
		info.Lifetime = opts.TTL
	}
	for range 5 {
		info.ID = randomID(10)
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secretName(info.ID), Namespace: t.Namespace, Labels: map[string]string{LabelToken: "true", LabelCaller: labelValue(opts.Name)}},
			Type:       SecretType,
			StringData: encodeInfo(info),
		}
		sec.StringData[keyHash] = hash(secret)
		err := t.Client.Create(ctx, sec)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("storing the token in a Secret of namespace %s: %w", t.Namespace, err)
		}
		return tokenPre + info.ID + "_" + secret, info, nil
	}
	return "", nil, errors.New("could not find a free token id")
}

// List describes every token, by name then creation.
func (t *Tokens) List(ctx context.Context) ([]*TokenInfo, error) {
	var l corev1.SecretList
	if err := t.Client.List(ctx, &l, client.InNamespace(t.Namespace), client.MatchingLabels{LabelToken: "true"}); err != nil {
		return nil, err
	}
	var out []*TokenInfo
	for i := range l.Items {
		if info, err := decodeInfo(&l.Items[i]); err == nil {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Created.Before(out[j].Created)
	})
	return out, nil
}

// Revoke marks the token with the given id revoked: it is refused from its
// next request on. The Secret stays, so that the refusal can say so and
// list can show it.
func (t *Tokens) Revoke(ctx context.Context, id string) (*TokenInfo, error) {
	return t.update(ctx, id, func(info *TokenInfo) {
		now := t.now()
		info.Revoked = &now
	})
}

// Rotate makes a new token of the same name and scopes, with the same
// lifetime as the old one had, and makes the old one expire after grace
// (at once when grace is zero), so that a pipeline can switch over.
func (t *Tokens) Rotate(ctx context.Context, id string, grace time.Duration) (string, *TokenInfo, error) {
	old, err := t.get(ctx, id)
	if err != nil {
		return "", nil, err
	}
	switch {
	case old.State(t.now()) == "revoked":
		return "", nil, fmt.Errorf("token %s is revoked; create a new one instead", id)
	case old.RotatedTo != "":
		return "", nil, fmt.Errorf("token %s was rotated already, into %s: rotate %s instead", id, old.RotatedTo, old.RotatedTo)
	case old.State(t.now()) == "expired":
		return "", nil, fmt.Errorf("token %s expired at %s; create a new one instead: inrun serve token create --name %s", id, old.Expires.Format(time.RFC3339), old.Name)
	}
	opts := CreateOptions{Name: old.Name, Scopes: old.Scopes, TTL: old.Lifetime}
	if old.Lifetime == 0 && old.Expires != nil {
		opts.TTL = old.Expires.Sub(old.Created) // made before the lifetime was kept
	}
	tok, info, err := t.Create(ctx, opts)
	if err != nil {
		return "", nil, err
	}
	_, err = t.update(ctx, id, func(i *TokenInfo) {
		i.RotatedTo = info.ID
		if grace <= 0 {
			now := t.now()
			i.Revoked = &now
			return
		}
		exp := t.now().Add(grace)
		if i.Expires == nil || exp.Before(*i.Expires) {
			i.Expires = &exp
		}
	})
	return tok, info, err
}

func (t *Tokens) get(ctx context.Context, id string) (*TokenInfo, error) {
	if !tokenIDRE.MatchString(id) {
		return nil, fmt.Errorf("%q is not a token id; inrun serve token list shows them", id)
	}
	var sec corev1.Secret
	if err := t.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: secretName(id)}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no token %s in namespace %s; inrun serve token list shows them", id, t.Namespace)
		}
		return nil, err
	}
	return decodeInfo(&sec)
}

func (t *Tokens) update(ctx context.Context, id string, change func(*TokenInfo)) (*TokenInfo, error) {
	if !tokenIDRE.MatchString(id) {
		return nil, fmt.Errorf("%q is not a token id; inrun serve token list shows them", id)
	}
	for {
		var sec corev1.Secret
		if err := t.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: secretName(id)}, &sec); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("no token %s in namespace %s; inrun serve token list shows them", id, t.Namespace)
			}
			return nil, err
		}
		info, err := decodeInfo(&sec)
		if err != nil {
			return nil, err
		}
		change(info)
		for k, v := range encodeInfo(info) {
			sec.Data[k] = []byte(v)
		}
		if info.Revoked == nil {
			delete(sec.Data, keyRevoked)
		}
		if info.Expires == nil {
			delete(sec.Data, keyExpires)
		}
		err = t.Client.Update(ctx, &sec)
		if apierrors.IsConflict(err) {
			continue
		}
		return info, err
	}
}

// Authenticate reads the token's Secret, on every request, so that a
// revoked or expired token is refused at once, and compares the hash in
// constant time.
func (t *Tokens) Authenticate(ctx context.Context, bearer string) (*Caller, *Problem) {
	const fix = "send Authorization: Bearer <token>, with a token from inrun serve token create"
	if bearer == "" {
		return nil, problem(http.StatusUnauthorized, CodeUnauthenticated, fix, "no token: the request has no Authorization: Bearer header")
	}
	rest, ok := strings.CutPrefix(bearer, tokenPre)
	id, secret, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || !tokenIDRE.MatchString(id) || secret == "" {
		return nil, problem(http.StatusUnauthorized, CodeUnauthenticated, fix, "the bearer token is not an Inrun token: they read inrun_<id>_<secret>")
	}
	// An unknown id and a wrong secret get one answer: which ids exist is
	// not the caller's to learn (they show in Events).
	unknown := func() (*Caller, *Problem) {
		return nil, problem(http.StatusUnauthorized, CodeUnauthenticated, "send the whole token as it was given, or ask for a new one: inrun serve token create",
			"token %s is not known to this gateway, or does not match", id)
	}
	var sec corev1.Secret
	err := t.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: secretName(id)}, &sec)
	switch {
	case apierrors.IsNotFound(err):
		return unknown()
	case err != nil:
		p := problem(http.StatusServiceUnavailable, CodeUnavailable, "try again shortly", "the gateway cannot read its tokens right now")
		p.RetryAfter = time.Second
		return nil, p
	}
	want := sec.Data[keyHash]
	if sec.Type != SecretType || subtle.ConstantTimeCompare([]byte(hash(secret)), want) != 1 {
		return unknown()
	}
	info, derr := decodeInfo(&sec)
	if derr != nil {
		return nil, problem(http.StatusUnauthorized, CodeUnauthenticated, "ask for a new token: inrun serve token create", "token %s is damaged: %v", id, derr)
	}
	now := t.now()
	switch info.State(now) {
	case "revoked":
		return nil, problem(http.StatusUnauthorized, CodeTokenRevoked, "ask for a new token: inrun serve token create", "token %s (%s) was revoked at %s", id, info.Name, info.Revoked.Format(time.RFC3339))
	case "expired":
		return nil, problem(http.StatusUnauthorized, CodeTokenExpired, "ask for a new token, or rotate it before it expires: inrun serve token rotate", "token %s (%s) expired at %s", id, info.Name, info.Expires.Format(time.RFC3339))
	}
	return &Caller{TokenID: id, Name: info.Name, Scopes: info.Scopes}, nil
}

func secretName(id string) string { return "inrun-token-" + id }

func hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func encodeInfo(i *TokenInfo) map[string]string {
	m := map[string]string{keyName: i.Name, keyScopes: strings.Join(i.Scopes, ","), keyCreated: i.Created.Format(time.RFC3339)}
	if i.Expires != nil {
		m[keyExpires] = i.Expires.UTC().Format(time.RFC3339)
	}
	if i.Revoked != nil {
		m[keyRevoked] = i.Revoked.UTC().Format(time.RFC3339)
	}
	if i.Lifetime > 0 {
		m[keyLifetime] = i.Lifetime.String()
	}
	if i.RotatedTo != "" {
		m[keyRotatedTo] = i.RotatedTo
	}
	return m
}

func decodeInfo(sec *corev1.Secret) (*TokenInfo, error) {
	id, ok := strings.CutPrefix(sec.Name, "inrun-token-")
	if !ok {
		return nil, fmt.Errorf("secret %s is not a token's", sec.Name)
	}
	d := func(k string) string { return string(sec.Data[k]) }
	info := &TokenInfo{ID: id, Name: d(keyName)}
	if s := d(keyScopes); s != "" {
		info.Scopes = strings.Split(s, ",")
	}
	var err error
	if info.Created, err = time.Parse(time.RFC3339, d(keyCreated)); err != nil {
		return nil, fmt.Errorf("created: %w", err)
	}
	for _, f := range []struct {
		key string
		to  **time.Time
	}{{keyExpires, &info.Expires}, {keyRevoked, &info.Revoked}} {
		if s := d(f.key); s != "" {
			ts, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.key, err)
			}
			*f.to = &ts
		}
	}
	if s := d(keyLifetime); s != "" {
		if info.Lifetime, err = time.ParseDuration(s); err != nil {
			return nil, fmt.Errorf("%s: %w", keyLifetime, err)
		}
	}
	info.RotatedTo = d(keyRotatedTo)
	return info, nil
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// randomID returns n random lower-case letters and digits.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

func sortedUnique(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	j := 0
	for i, s := range out {
		if i == 0 || s != out[j-1] {
			out[j] = s
			j++
		}
	}
	return out[:j]
}
