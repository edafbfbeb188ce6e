package localstate_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/localstate"
)

// openState opens the store at path with key and returns it with a State
// over it; logs go to log.
func openState(t *testing.T, path string, key localstate.SecretKey, log *bytes.Buffer) (*localstate.Bolt, *localstate.State) {
	t.Helper()
	b, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: key, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	st, err := localstate.New(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

var (
	testSecret = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "uid-db", ResourceVersion: "3"},
		Data: map[string][]byte{"password": []byte("correct-horse-battery-staple")}}
	testToken = func() *authenticationv1.TokenRequest {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", Name: "web", UID: "uid-web"}}}
		tr.Status.Token = "eyJhbGciOiJSUzI1NiJ9.the-token"
		return tr
	}()
	testTokenKey = localstate.TokenKey("default", "default", testToken)
)

// fileHolds reports whether the file at path holds s anywhere, free pages
// included.
func fileHolds(t *testing.T, path, s string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(data, []byte(s))
}

// keepSecretAndToken keeps testSecret and testToken in the store at path,
// sealed with testKey.
func keepSecretAndToken(t *testing.T, path string, log *bytes.Buffer) {
	t.Helper()
	b, st := openState(t, path, testKey, log)
	if err := st.PutSecret(testSecret); err != nil {
		t.Fatal(err)
	}
	if err := st.PutToken(testTokenKey, testToken); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
}

// With a key, secrets and tokens are in the file sealed: their content is
// nowhere in it, and they read back with the same key.
func TestSecretsSealedAtRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	var log bytes.Buffer
	keepSecretAndToken(t, path, &log)
	for _, s := range []string{"correct-horse-battery-staple", "the-token"} {
		if fileHolds(t, path, s) {
			t.Errorf("the file holds %q in the clear", s)
		}
	}
	_, st := openState(t, path, testKey, &log)
	sec, ok, err := st.Secret("default", "db")
	if err != nil || !ok || string(sec.Data["password"]) != "correct-horse-battery-staple" {
		t.Fatalf("Secret after reopen = %v %v %v", sec, ok, err)
	}
	tr, ok, err := st.Token(testTokenKey)
	if err != nil || !ok || tr.Status.Token != testToken.Status.Token {
		t.Fatalf("Token after reopen = %v %v %v", tr, ok, err)
	}
	if s := log.String(); strings.Contains(s, string(testKey)) || strings.Contains(s, hex.EncodeToString(testKey)) {
		t.Fatalf("the key is in the log: %s", s)
	}
}

// A store opened with another key has no secrets or tokens: those sealed
// with the first are deleted, logged once; none crashes or fails a read.
func TestSecretsUnderAnotherKeyAreAbsent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	var log bytes.Buffer
	keepSecretAndToken(t, path, &log)
	other := localstate.SecretKey(bytes.Repeat([]byte{7}, localstate.SecretKeySize))
	log.Reset()
	_, st := openState(t, path, other, &log)
	if _, ok, err := st.Secret("default", "db"); ok || err != nil {
		t.Fatalf("Secret under another key = %v %v, want absent", ok, err)
	}
	if _, ok, err := st.Token(testTokenKey); ok || err != nil {
		t.Fatalf("Token under another key = %v %v, want absent", ok, err)
	}
	if n := strings.Count(log.String(), "do not open with the SecretKey"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "dropped=2") {
		t.Fatalf("the log does not count the two values: %s", log.String())
	}
}

// Without a key the store keeps no secrets or tokens: puts are dropped,
// those kept before (sealed, or in the clear by an earlier build) are
// deleted at open, and the open says so.
func TestNoKeyKeepsNoSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	var log bytes.Buffer
	keepSecretAndToken(t, path, &log)
	log.Reset()
	b, st := openState(t, path, nil, &log)
	if !strings.Contains(log.String(), "no SecretKey: the local state keeps no secrets") || !strings.Contains(log.String(), "dropped=2") {
		t.Fatalf("the open does not say it keeps no secrets: %s", log.String())
	}
	if _, ok, _ := st.Secret("default", "db"); ok {
		t.Fatal("a secret sealed before is read without a key")
	}
	if err := st.PutSecret(testSecret); err != nil {
		t.Fatal(err)
	}
	if err := st.PutToken(testTokenKey, testToken); err != nil {
		t.Fatal(err)
	}
	for _, k := range []localstate.Kind{localstate.Secrets, localstate.Tokens} {
		if vals, err := b.List(k); err != nil || len(vals) != 0 {
			t.Fatalf("List(%s) without a key = %v %v, want nothing", k, vals, err)
		}
	}
	_ = b.Close()
	if fileHolds(t, path, "correct-horse-battery-staple") || fileHolds(t, path, "the-token") {
		t.Fatal("a secret or token reached the file without a key")
	}
}

// Values an earlier build kept in the clear are deleted at open, with a
// key or without.
func TestCleartextSecretsOfAnEarlierBuildAreDeleted(t *testing.T) {
	for _, key := range []localstate.SecretKey{testKey, nil} {
		t.Run(fmt.Sprintf("key=%v", key != nil), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			var log bytes.Buffer
			b, _ := openState(t, path, key, &log)
			_ = b.Close()
			clear, err := testSecret.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte(localstate.Secrets)).Put([]byte("default/db"), clear)
			}); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			log.Reset()
			_, st := openState(t, path, key, &log)
			if _, ok, _ := st.Secret("default", "db"); ok {
				t.Fatal("a secret kept in the clear is read")
			}
			if !strings.Contains(log.String(), "dropped=1") {
				t.Fatalf("the open does not say it deleted it: %s", log.String())
			}
		})
	}
}

func TestSecretKeyOption(t *testing.T) {
	_, err := localstate.OpenBolt(filepath.Join(t.TempDir(), "s.db"), localstate.BoltOptions{SecretKey: localstate.SecretKey("short")})
	if !errors.Is(err, localstate.ErrInvalidArgument) || !strings.Contains(err.Error(), "5 bytes") {
		t.Fatalf("OpenBolt with a 5-byte key = %v, want ErrInvalidArgument", err)
	}
	opts := localstate.BoltOptions{SecretKey: testKey}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		if s := fmt.Sprintf(format, opts); strings.Contains(s, string(testKey)) || strings.Contains(s, hex.EncodeToString(testKey)) || strings.Contains(s, "48 49 50") {
			t.Errorf("Sprintf(%s) shows the key: %s", format, s)
		}
	}
	var log bytes.Buffer
	slog.New(slog.NewJSONHandler(&log, nil)).Info("opts", "key", testKey, "opts", opts)
	if strings.Contains(log.String(), hex.EncodeToString(testKey)) || strings.Contains(log.String(), "MDEy") || strings.Contains(log.String(), string(testKey)) {
		t.Errorf("slog shows the key: %s", log.String())
	}
}

func TestParseSecretKey(t *testing.T) {
	raw := bytes.Repeat([]byte{0xAB}, 32)
	for _, tc := range []struct {
		name string
		data []byte
		want []byte
	}{
		{"32 raw bytes", raw, raw},
		{"64 hex digits", []byte(strings.Repeat("ab", 32)), raw},
		{"64 hex digits and a newline", []byte(strings.Repeat("AB", 32) + "\n"), raw},
		{"31 bytes", raw[:31], nil},
		{"33 bytes", append(bytes.Clone(raw), '\n'), nil},
		{"62 hex digits", []byte(strings.Repeat("ab", 31)), nil},
		{"64 characters, not hex", []byte(strings.Repeat("zz", 32)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := localstate.ParseSecretKey(tc.data)
			if tc.want == nil {
				if !errors.Is(err, localstate.ErrInvalidArgument) {
					t.Fatalf("ParseSecretKey = %v, want ErrInvalidArgument", err)
				}
				if strings.Contains(err.Error(), "zz") || strings.Contains(err.Error(), "ab") {
					t.Fatalf("the error shows the content: %v", err)
				}
				return
			}
			if err != nil || !bytes.Equal(k, tc.want) {
				t.Fatalf("ParseSecretKey = %x %v", []byte(k), err)
			}
		})
	}
}

func TestReadSecretKeyFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		mode os.FileMode
		ok   bool
	}{
		{"0600", 0o600, true},
		{"0400", 0o400, true},
		{"0640, group-readable", 0o640, false},
		{"0604, readable by others", 0o604, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(path, []byte(strings.Repeat("0f", 32)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			k, err := localstate.ReadSecretKeyFile(path)
			if tc.ok {
				if err != nil || len(k) != localstate.SecretKeySize {
					t.Fatalf("ReadSecretKeyFile = %v", err)
				}
				return
			}
			if !errors.Is(err, localstate.ErrInvalidArgument) || !strings.Contains(err.Error(), path) {
				t.Fatalf("ReadSecretKeyFile = %v, want ErrInvalidArgument naming the file", err)
			}
		})
	}
	if _, err := localstate.ReadSecretKeyFile(dir); !errors.Is(err, localstate.ErrInvalidArgument) {
		t.Fatalf("ReadSecretKeyFile(a directory) = %v, want ErrInvalidArgument", err)
	}
}
