package config

import "path/filepath"

// Hidden are the paths of c that no contained agent may see: the dev
// server's state directory (its database and every session's history),
// the user configuration directory, the codec key file and the GitHub
// App's private key file.
func (c Config) Hidden() []string {
	var paths []string
	if c.Dev.StateDir != "" {
		paths = append(paths, c.Dev.StateDir)
	}
	if f, err := userFilePath(); err == nil {
		paths = append(paths, filepath.Dir(f))
	}
	if c.Codec.KeyFile != "" {
		paths = append(paths, c.Codec.KeyFile)
	}
	if c.GitHub.AppPrivateKeyFile != "" {
		paths = append(paths, c.GitHub.AppPrivateKeyFile)
	}
	return paths
}
