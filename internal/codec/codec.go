// Package codec encrypts what sessions store in Temporal: a payload codec
// with AES-256-GCM, the data and failure converters that use it (failure
// messages and stack traces are encrypted too), and the HTTP codec server
// the Temporal UI calls to show the plaintext to people who run it.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// Metadata of encrypted payloads.
const (
	// Encoding marks a payload this codec encrypted.
	Encoding = "binary/encrypted"
	// metaKeyID names the key that encrypted a payload: the first bytes of
	// its SHA-256, so a wrong key is reported as such.
	metaKeyID = "encryption-key-id"
)

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// Codec is a converter.PayloadCodec that encrypts payloads with
// AES-256-GCM.
type Codec struct {
	aead  cipher.AEAD
	keyID string
}

// New returns a Codec for a 32-byte key.
func New(key []byte) (*Codec, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("encryption key has %d bytes, want %d (AES-256)", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	sum := sha256.Sum256(key)
	return &Codec{aead: aead, keyID: hex.EncodeToString(sum[:4])}, nil
}

// ParseKey decodes a key as written in a key file or variable: base64
// (standard or URL alphabet) or hex, surrounding space ignored.
func ParseKey(text string) ([]byte, error) {
	s := strings.TrimSpace(text)
	for _, dec := range []func(string) ([]byte, error){
		base64.StdEncoding.DecodeString, base64.URLEncoding.DecodeString,
		base64.RawStdEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString,
	} {
		if key, err := dec(s); err == nil && len(key) == KeySize {
			return key, nil
		}
	}
	return nil, fmt.Errorf("not a %d-byte key in base64 or hex (make one with: openssl rand -base64 32)", KeySize)
}

// Load reads the key from file or, when file is "", from the environment
// variable env. It returns nil and no error when neither is set:
// encryption is off.
func Load(file, env string) (*Codec, error) {
	var text, source string
	switch {
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("codec.key-file: %w", err)
		}
		text, source = string(data), "codec.key-file "+file
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("codec.key-env: variable %s is not set", env)
		}
		text, source = v, "codec.key-env "+env
	default:
		return nil, nil
	}
	key, err := ParseKey(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return New(key)
}

// Encode encrypts each payload, metadata and data together.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := p.Marshal()
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		nonce := make([]byte, c.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				metaKeyID:                  []byte(c.keyID),
			},
			Data: c.aead.Seal(nonce, nonce, plain, nil),
		}
	}
	return out, nil
}

// Decode decrypts the payloads this codec encrypted and passes others on.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		if id := string(p.GetMetadata()[metaKeyID]); id != c.keyID {
			return nil, fmt.Errorf("decrypt payload: encrypted with key %s, this key is %s", id, c.keyID)
		}
		data := p.GetData()
		n := c.aead.NonceSize()
		if len(data) < n {
			return nil, fmt.Errorf("decrypt payload: too short")
		}
		plain, err := c.aead.Open(nil, data[:n], data[n:], nil)
		if err != nil {
			return nil, fmt.Errorf("decrypt payload: %w", err)
		}
		var dec commonpb.Payload
		if err := dec.Unmarshal(plain); err != nil {
			return nil, fmt.Errorf("decrypt payload: %w", err)
		}
		out[i] = &dec
	}
	return out, nil
}

// DataConverter is the default data converter with payloads encrypted by c.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// FailureConverter moves failure messages and stack traces into encrypted
// attributes, so an error's text is ciphertext in Temporal too.
func (c *Codec) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          c.DataConverter(),
		EncodeCommonAttributes: true,
	})
}

// Handler is the codec server the Temporal UI (and the temporal CLI's
// --codec-endpoint) calls: POST /encode and /decode with the payloads as
// JSON, CORS open to the UI's origins.
func (c *Codec) Handler(origins ...string) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && allowed(origin, origins) {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Allow-Credentials", "true")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type,X-Namespace,Authorization")
			w.Header().Set("Access-Control-Allow-Methods", "POST,OPTIONS")
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

func allowed(origin string, origins []string) bool {
	for _, o := range origins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}
