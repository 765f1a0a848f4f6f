package config

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
)

// maxAppKeyFileSize bounds what AppKey reads: an RSA private key's PEM
// file is a few KiB.
const maxAppKeyFileSize = 64 << 10

// GitHubApp is the GitHub App the worker authenticates as
// (github.app-*), as [GitHubConfig.App] reads it.
type GitHubApp struct {
	// ID is the app's ID and InstallationID its installation's.
	ID, InstallationID int64
	// Key is the app's private key.
	Key *rsa.PrivateKey
	// PEM is the text of the key file, a secret to redact like a token.
	PEM string
}

// UsesApp reports whether the worker authenticates as a GitHub App's
// installation: github.app-id, github.app-installation-id and
// github.app-private-key-file are all set. It then does, whatever token
// is configured too.
func (c GitHubConfig) UsesApp() bool {
	return c.AppID != 0 && c.AppInstallationID != 0 && c.AppPrivateKeyFile != ""
}

// App reads the GitHub App of github.app-*, or returns nil when
// [GitHubConfig.UsesApp] is false. The key file must be a regular file
// readable by its owner alone and hold an RSA private key in PEM form;
// the errors name the key at fault.
func (c GitHubConfig) App() (*GitHubApp, error) {
	if !c.UsesApp() {
		return nil, nil
	}
	for _, id := range []struct {
		key   string
		value int
	}{{"github.app-id", c.AppID}, {"github.app-installation-id", c.AppInstallationID}} {
		if id.value < 0 {
			return nil, &fieldError{spec: lookupSpec(id.key), value: id.value, reason: "must be a positive number"}
		}
	}
	key, data, err := c.appKey()
	if err != nil {
		return nil, err
	}
	return &GitHubApp{ID: int64(c.AppID), InstallationID: int64(c.AppInstallationID), Key: key, PEM: strings.TrimSpace(string(data))}, nil
}

// appKey reads and parses AppPrivateKeyFile.
func (c GitHubConfig) appKey() (*rsa.PrivateKey, []byte, error) {
	const what = "the GitHub App's private key"
	data, err := readOwnerFile("github.app-private-key-file", c.AppPrivateKeyFile, what, "the key", maxAppKeyFileSize)
	if err != nil {
		return nil, nil, err
	}
	fail := func(reason string, args ...any) error {
		return &fieldError{spec: lookupSpec("github.app-private-key-file"), value: c.AppPrivateKeyFile, reason: fmt.Sprintf(reason, args...)}
	}
	const want = "it must hold " + what + " in PEM form, the .pem file the app's settings page generates"
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, nil, fail("holds no PEM block: %s", want)
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, nil, fail("holds no valid RSA private key (%v): %s", err, want)
		}
		return key, data, nil
	case "PRIVATE KEY":
		parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, nil, fail("holds no valid private key (%v): %s", err, want)
		}
		key, ok := parsed.(*rsa.PrivateKey)
		if !ok {
			return nil, nil, fail("holds a %T, not an RSA key: %s", parsed, want)
		}
		return key, data, nil
	}
	return nil, nil, fail("holds a PEM block of type %q, not an RSA private key: %s", block.Type, want)
}

// validateApp checks github.app-*: all three or none, positive IDs, and
// a key file that is its owner's alone and holds an RSA private key.
func (c *GitHubConfig) validateApp(v *validation) {
	v.check("github.app-id", c.AppID < 0, c.AppID, "must be the GitHub App's ID, a positive number (0 = no app)")
	v.check("github.app-installation-id", c.AppInstallationID < 0, c.AppInstallationID,
		"must be the ID of the GitHub App's installation, a positive number (0 = no app)")
	settings := []struct {
		key   string
		value any
		set   bool
	}{
		{"github.app-id", c.AppID, c.AppID != 0},
		{"github.app-installation-id", c.AppInstallationID, c.AppInstallationID != 0},
		{"github.app-private-key-file", c.AppPrivateKeyFile, c.AppPrivateKeyFile != ""},
	}
	var set []string
	for _, s := range settings {
		if s.set {
			set = append(set, s.key)
		}
	}
	if len(set) > 0 && len(set) < len(settings) {
		for _, s := range settings {
			v.check(s.key, !s.set, s.value, "must be set with "+strings.Join(set, " and ")+
				": a GitHub App needs all three of github.app-id, github.app-installation-id and github.app-private-key-file, or none")
		}
	}
	if c.AppPrivateKeyFile != "" {
		if _, _, err := c.appKey(); err != nil {
			v.errs = append(v.errs, err)
		}
	}
}
