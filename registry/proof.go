package registry

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
)

// Media types and URIs of a proof.
const (
	// MediaTypeProof is the artifactType of a proof manifest.
	MediaTypeProof = "application/vnd.inrun.proof.v1"
	// MediaTypeDSSE is the proof's one layer: a DSSE envelope in JSON.
	MediaTypeDSSE = "application/vnd.dsse.envelope.v1+json"
	// PayloadTypeInToto is the DSSE payload type of an in-toto Statement.
	PayloadTypeInToto = "application/vnd.in-toto+json"
	// StatementType is the in-toto Statement version proofs carry.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType names the predicate: Inrun's test results.
	PredicateType = "https://github.com/inrun/inrun/blob/main/docs/registry.md#test-results-v1"
)

// Results are what a pattern passed before it was pushed: the predicate of
// its proof.
type Results struct {
	// InrunVersion is the Inrun that ran the tests.
	InrunVersion string `json:"inrunVersion"`
	// KubernetesVersion is the API server's version e2e ran on.
	KubernetesVersion string `json:"kubernetesVersion"`
	// Simulate and E2E are the two suites.
	Simulate Suite `json:"simulate"`
	E2E      Suite `json:"e2e"`
	// Finished is when the tests ended, in UTC.
	Finished time.Time `json:"finished"`
}

// Suite is the result of one test file.
type Suite struct {
	// File is the test file, relative to the pattern (test/e2e.yaml).
	File string `json:"file"`
	// Cases is how many cases ran, Passed how many of them passed.
	Cases  int `json:"cases"`
	Passed int `json:"passed"`
	// Duration is how long the suite took, as a Go duration.
	Duration string `json:"duration"`
}

// Check reports why r is not a passing result: both suites must have run
// at least one case, and passed every one. A simulate-only result
// (SimulateOnly) is not a passing one.
func (r *Results) Check() error {
	var probs []string
	for _, s := range []struct {
		name  string
		suite Suite
	}{{"simulate", r.Simulate}, {"e2e", r.E2E}} {
		switch {
		case s.suite.Cases == 0:
			probs = append(probs, s.name+" ran no case")
		case s.suite.Passed != s.suite.Cases:
			probs = append(probs, fmt.Sprintf("%s passed %d of %d cases", s.name, s.suite.Passed, s.suite.Cases))
		}
	}
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "; "))
	}
	return nil
}

// SimulateOnly reports whether r is a result of simulate alone: simulate
// ran at least one case and passed every one, and e2e ran none. inrun
// --dev publishes the built-in patterns with such a proof so that they are
// there at once; it is signed like any other and says exactly what ran,
// but it does not verify (Verify): only a pattern that also passed on a
// real API server does.
func (r *Results) SimulateOnly() bool {
	return r.Simulate.Cases > 0 && r.Simulate.Passed == r.Simulate.Cases && r.E2E.Cases == 0
}

// Statement is an in-toto Statement v1 whose predicate is Results.
type Statement struct {
	Type          string            `json:"_type"`
	Subject       []StatementTarget `json:"subject"`
	PredicateType string            `json:"predicateType"`
	Predicate     Results           `json:"predicate"`
}

// StatementTarget is an in-toto ResourceDescriptor naming an artifact by
// digest.
type StatementTarget struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Envelope is a DSSE envelope.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one DSSE signature.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// pae is DSSE's pre-authentication encoding: what is signed, so that the
// payload type cannot be swapped under a signature.
func pae(payloadType string, payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload)
}

// Sign returns a DSSE envelope, signed by s, around an in-toto Statement
// that r is the result of the pattern whose manifest is subject. It refuses
// a result that is neither passing nor SimulateOnly.
func Sign(s *Signer, subject ocispec.Descriptor, name string, r Results) ([]byte, error) {
	if err := r.Check(); err != nil && !r.SimulateOnly() {
		return nil, fmt.Errorf("not signing a failed result: %w", err)
	}
	st := Statement{
		Type:          StatementType,
		Subject:       []StatementTarget{{Name: name, Digest: map[string]string{subject.Digest.Algorithm().String(): subject.Digest.Encoded()}}},
		PredicateType: PredicateType,
		Predicate:     r,
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	env := Envelope{
		PayloadType: PayloadTypeInToto,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures: []Signature{{
			KeyID: s.Public().ID(),
			Sig:   base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, pae(PayloadTypeInToto, payload))),
		}},
	}
	return json.Marshal(env)
}

// Proof is a verified proof.
type Proof struct {
	// Descriptor is the proof manifest's.
	Descriptor ocispec.Descriptor
	// Results are what the pattern passed.
	Results Results
	// Key is the trusted key whose signature holds.
	Key PublicKey
}

// VerifyError says why a proof does not verify, and how to fix it.
type VerifyError struct {
	// Subject is the pattern's digest.
	Subject digest.Digest
	// Reason is what failed.
	Reason string
	// Hint says what to do.
	Hint string
}

func (e *VerifyError) Error() string {
	msg := fmt.Sprintf("pattern %s does not verify: %s", e.Subject, e.Reason)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// IsVerifyError reports whether err is, or wraps, a *VerifyError.
func IsVerifyError(err error) bool {
	var v *VerifyError
	return errors.As(err, &v)
}

// Verify checks a DSSE envelope against the pattern manifest subject: a
// signature by one of trusted over the exact payload, an in-toto Statement
// of PredicateType whose only subject is subject's digest, and a passing
// result. It returns the results.
func Verify(envelope []byte, subject digest.Digest, trusted []PublicKey) (Results, PublicKey, error) {
	fail := func(hint, format string, args ...any) (Results, PublicKey, error) {
		return Results{}, PublicKey{}, &VerifyError{Subject: subject, Reason: fmt.Sprintf(format, args...), Hint: hint}
	}
	if len(trusted) == 0 {
		return fail("trust the publisher's public key: put its .pub file in the keys directory (inrun keys list shows it) or pass --key", "no trusted key to verify the proof with")
	}
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(envelope))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return fail("push the pattern again with inrun push", "the proof is not a DSSE envelope: %v", err)
	}
	if env.PayloadType != PayloadTypeInToto {
		return fail("", "the proof's payload type is %q, want %q", env.PayloadType, PayloadTypeInToto)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return fail("push the pattern again with inrun push", "the proof's payload is not base64: %v", err)
	}
	if len(env.Signatures) == 0 {
		return fail("push it with inrun push, which signs the proof with the publisher's key", "the proof is not signed")
	}
	msg := pae(env.PayloadType, payload)
	var key *PublicKey
	var ids []string
	for _, sig := range env.Signatures {
		ids = append(ids, sig.KeyID)
		raw, err := base64.StdEncoding.DecodeString(sig.Sig)
		if err != nil {
			continue
		}
		for i := range trusted {
			if ed25519.Verify(trusted[i].key, msg, raw) {
				key = &trusted[i]
				break
			}
		}
		if key != nil {
			break
		}
	}
	if key == nil {
		return fail("if you trust its publisher, add their public key (keyid "+strings.Join(ids, ", ")+") to the keys directory or pass it with --key",
			"no signature of the proof verifies with a trusted key (%d trusted, %d signatures)", len(trusted), len(env.Signatures))
	}
	var st Statement
	dec = json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return fail("", "the signed payload is not an in-toto Statement of Inrun results: %v", err)
	}
	if st.Type != StatementType || st.PredicateType != PredicateType {
		return fail("", "the signed statement is a %q with predicate %q, want a %q with %q", st.Type, st.PredicateType, StatementType, PredicateType)
	}
	if len(st.Subject) != 1 {
		return fail("", "the signed statement names %d subjects, want 1", len(st.Subject))
	}
	got := st.Subject[0].Digest[subject.Algorithm().String()]
	if got != subject.Encoded() {
		return fail("the proof belongs to another pattern; push this pattern with inrun push to make its own",
			"the proof is for %s:%s, not this pattern", subject.Algorithm(), got)
	}
	if st.Predicate.SimulateOnly() {
		return fail("inrun --dev publishes the built-in patterns so, to have them at once: pass --allow-unverified to run one anyway; inrun push runs both",
			"its proof records simulate only (%d/%d cases): its e2e cases never ran on a real API server", st.Predicate.Simulate.Passed, st.Predicate.Simulate.Cases)
	}
	if err := st.Predicate.Check(); err != nil {
		return fail("fix the failing tests and push again", "the proof records a failing result: %v", err)
	}
	return st.Predicate, *key, nil
}

// packProof pushes the proof manifest, whose subject is the pattern
// manifest, to dst, with envelope as its one layer.
func packProof(ctx context.Context, dst content.Pusher, subject ocispec.Descriptor, envelope []byte) (ocispec.Descriptor, error) {
	layer := content.NewDescriptorFromBytes(MediaTypeDSSE, envelope)
	if err := pushIfAbsent(ctx, dst, layer, envelope); err != nil {
		return ocispec.Descriptor{}, err
	}
	return oras.PackManifest(ctx, dst, oras.PackManifestVersion1_1, MediaTypeProof, oras.PackManifestOptions{
		Subject: &subject,
		Layers:  []ocispec.Descriptor{layer},
	})
}
