package localstate

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// SecretKeySize is the size of a SecretKey: 32 bytes, AES-256.
const SecretKeySize = 32

// SecretKey is the key a Bolt seals the values of Secrets and Tokens with
// (AES-256-GCM). It is never printed: fmt, slog and encoders of text or
// JSON show "[redacted]".
type SecretKey []byte

var (
	_ fmt.Formatter          = SecretKey(nil)
	_ slog.LogValuer         = SecretKey(nil)
	_ encoding.TextMarshaler = SecretKey(nil)
)

// Format prints "[redacted]" for every verb, so that a key inside options
// printed with %v or %#v is not shown.
func (SecretKey) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "[redacted]") }

// LogValue is "[redacted]".
func (SecretKey) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalText is "[redacted]", for encoders (JSON's among them) of a
// struct that holds a key.
func (SecretKey) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// ParseSecretKey reads a key from data: SecretKeySize raw bytes, or
// 2*SecretKeySize hexadecimal digits (surrounding white space ignored).
// Errors name the size found, never the content; they wrap
// ErrInvalidArgument.
func ParseSecretKey(data []byte) (SecretKey, error) {
	if len(data) == SecretKeySize {
		return SecretKey(bytes.Clone(data)), nil
	}
	if t := bytes.TrimSpace(data); len(t) == 2*SecretKeySize {
		k := make([]byte, SecretKeySize)
		if _, err := hex.Decode(k, t); err == nil {
			return k, nil
		}
		return nil, fmt.Errorf("a key of %d characters that are not all hexadecimal digits: %w", len(t), ErrInvalidArgument)
	}
	return nil, fmt.Errorf("a key of %d bytes: want %d raw bytes or %d hexadecimal digits: %w", len(data), SecretKeySize, 2*SecretKeySize, ErrInvalidArgument)
}

// ReadSecretKeyFile reads a key file as ParseSecretKey does. The file must
// be a regular file that neither its group nor others may read, write or
// run (mode 0600 or 0400, say): a key anyone else can read protects
// nothing. Errors wrap ErrInvalidArgument and never show the content.
func ReadSecretKeyFile(path string) (SecretKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file (%s): %w", path, info.Mode().Type(), ErrInvalidArgument)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s has mode %#o: its group or others may use it; make it 0600 or 0400: %w", path, perm, ErrInvalidArgument)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4*SecretKeySize))
	if err != nil {
		return nil, fmt.Errorf("read key file %s: %w", path, err)
	}
	k, err := ParseSecretKey(data)
	clear(data)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// sealedPrefix starts every sealed value: a zero byte, which no protobuf
// message starts with (field number 0 does not exist), then the format
// version. The 12-byte nonce follows, then the ciphertext and its tag.
var sealedPrefix = []byte{0x00, 0x01}

// sealedKind reports whether the values of kind are sealed (or, without a
// key, not kept).
func sealedKind(kind Kind) bool { return kind == Secrets || kind == Tokens }

// isSealed reports whether v has the form of a sealed value.
func isSealed(v []byte) bool { return bytes.HasPrefix(v, sealedPrefix) }

// errUnsealed is a value that does not open with the key.
var errUnsealed = errors.New("does not open with the key")

// sealer seals values with AES-256-GCM under one key, binding each to its
// kind and key (the additional data), so that a value copied under
// another key does not open.
type sealer struct{ aead cipher.AEAD }

func newSealer(key SecretKey) (*sealer, error) {
	if len(key) != SecretKeySize {
		return nil, fmt.Errorf("SecretKey has %d bytes, not %d: %w", len(key), SecretKeySize, ErrInvalidArgument)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

func sealData(k Key) []byte {
	return []byte("kubeletkit localstate\x00" + string(k.Kind) + "\x00" + k.Key)
}

// seal returns v sealed under k, with a random nonce.
func (s *sealer) seal(k Key, v []byte) []byte {
	n := s.aead.NonceSize()
	out := make([]byte, len(sealedPrefix)+n, len(sealedPrefix)+n+len(v)+s.aead.Overhead())
	copy(out, sealedPrefix)
	_, _ = rand.Read(out[len(sealedPrefix):]) // never fails (crypto/rand)
	return s.aead.Seal(out, out[len(sealedPrefix):], v, sealData(k))
}

// open returns the value sealed in v under k, or errUnsealed.
func (s *sealer) open(k Key, v []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if !isSealed(v) || len(v) < len(sealedPrefix)+n+s.aead.Overhead() {
		return nil, errUnsealed
	}
	nonce := v[len(sealedPrefix) : len(sealedPrefix)+n]
	out, err := s.aead.Open(nil, nonce, v[len(sealedPrefix)+n:], sealData(k))
	if err != nil {
		return nil, errUnsealed
	}
	return out, nil
}
