package codec_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/internal/codec"
)

func testCodec(t *testing.T, fill byte) *codec.Codec {
	t.Helper()
	c, err := codec.New(bytes.Repeat([]byte{fill}, codec.KeySize))
	require.NoError(t, err)
	return c
}

func TestCodecRoundTrip(t *testing.T) {
	c := testCodec(t, 7)
	dc := c.DataConverter()
	p, err := dc.ToPayload(map[string]string{"prompt": "implement US-001"})
	require.NoError(t, err)
	require.Equal(t, codec.Encoding, string(p.Metadata[converter.MetadataEncoding]))
	require.NotContains(t, string(p.Data), "US-001")
	var back map[string]string
	require.NoError(t, dc.FromPayload(p, &back))
	require.Equal(t, "implement US-001", back["prompt"])

	_, err = testCodec(t, 8).Decode([]*commonpb.Payload{p})
	require.ErrorContains(t, err, "encrypted with key")

	f := c.FailureConverter().ErrorToFailure(errorString("agent said sk-ant-123"))
	require.NotContains(t, f.GetMessage(), "sk-ant", "the message is moved into encrypted attributes")
	require.Contains(t, c.FailureConverter().FailureToError(f).Error(), "agent said sk-ant-123")
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestParseKey(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	for _, text := range []string{base64.StdEncoding.EncodeToString(key) + "\n", strings.Repeat("01", 32)} {
		got, err := codec.ParseKey(text)
		require.NoError(t, err)
		require.Equal(t, key, got)
	}
	_, err := codec.ParseKey("too short")
	require.ErrorContains(t, err, "openssl rand -base64 32")
}

func TestCodecServerDecodesForTheUI(t *testing.T) {
	c := testCodec(t, 7)
	p, err := c.DataConverter().ToPayload("hello")
	require.NoError(t, err)
	srv := httptest.NewServer(c.Handler("*"))
	defer srv.Close()

	body, err := json.Marshal(map[string]any{"payloads": []any{json.RawMessage(mustProtoJSON(t, p))}})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/decode", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://127.0.0.1:8233")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "http://127.0.0.1:8233", resp.Header.Get("Access-Control-Allow-Origin"))
	var out struct {
		Payloads []struct {
			Metadata map[string]string `json:"metadata"`
			Data     string            `json:"data"`
		} `json:"payloads"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Len(t, out.Payloads, 1)
	data, err := base64.StdEncoding.DecodeString(out.Payloads[0].Data)
	require.NoError(t, err)
	require.Equal(t, `"hello"`, string(data))
}

func mustProtoJSON(t *testing.T, p *commonpb.Payload) []byte {
	t.Helper()
	meta := map[string]string{}
	for k, v := range p.Metadata {
		meta[k] = base64.StdEncoding.EncodeToString(v)
	}
	b, err := json.Marshal(map[string]any{"metadata": meta, "data": base64.StdEncoding.EncodeToString(p.Data)})
	require.NoError(t, err)
	return b
}
