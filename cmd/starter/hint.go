package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// self is how the user ran this program: "go run ./cmd/starter" for a
// binary that go run built, its bare name when that is what PATH finds,
// else the path it was run by.
func self() string {
	name := os.Args[0]
	if strings.Contains(name, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/starter"
	}
	base := filepath.Base(name)
	if name == base {
		return name
	}
	found, err1 := exec.LookPath(base)
	exe, err2 := os.Executable()
	if err1 == nil && err2 == nil && sameFile(found, exe) {
		return base
	}
	return name
}

func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// commandLine is a command line to print: this program, the subcommand,
// then args.
func commandLine(sub string, args ...string) string {
	return strings.Join(append([]string{self(), sub}, args...), " ")
}
