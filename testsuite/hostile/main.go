// Command hostile is an agent that tries to escape, for the containment
// tests: it looks for a secret in other processes' environments, reads
// files an agent must never see, signals the worker, writes outside its
// workspace, answers and stops another session through the Temporal
// server, and connects to the host's loopback directly and through its
// proxy. It writes what each try did to hostile.json in its working
// directory and prints one line (the command backend's output). It reads
// and ignores the prompt on stdin.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// try is what one escape did: OK when it got through.
type try struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// list is a repeatable flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var reads, writes, connects, proxied, starterArgs list
	envName := flag.String("env", "GITHUB_TOKEN", "variable to look for in other processes' environments")
	killPID := flag.Int("kill", 0, "PID to signal (signal 0: proves it could be killed)")
	starter := flag.String("starter", "", "starter binary")
	temporal := flag.String("temporal", "", "TEMPORAL_ADDRESS of the host's server")
	flag.Var(&reads, "read", "file or directory to read (repeatable)")
	flag.Var(&writes, "write", "file to append a line to (repeatable)")
	flag.Var(&connects, "connect", "host:port to connect to directly (repeatable)")
	flag.Var(&proxied, "proxy", "host:port to reach with CONNECT through $HTTPS_PROXY (repeatable)")
	flag.Var(&starterArgs, "starter-run", "starter arguments, space separated (repeatable)")
	caps := flag.Bool("caps", false, "report the process's effective capabilities")
	locked := flag.String("syscalls", "", "a path the sandbox locks read-only: try to unmount it, and the other calls root's capabilities allow")
	gitPlan := flag.String("git", "", "what to plant for the worker's git: commondir, replace or inplace")
	marker := flag.String("marker", "", "host file the planted program writes when it runs (outside the sandbox)")
	flag.Parse()
	_, _ = io.Copy(io.Discard, os.Stdin)

	tries := map[string]try{"environ": scanEnviron(*envName)}
	if *caps {
		tries["capabilities"] = capabilities()
	}
	if *locked != "" {
		maps.Copy(tries, syscalls(*locked))
	}
	if *gitPlan != "" {
		maps.Copy(tries, plantGit(*gitPlan, *marker))
	}
	for _, p := range reads {
		tries["read "+p] = read(p)
	}
	for _, p := range writes {
		tries["write "+p] = appendTo(p)
	}
	if *killPID > 0 {
		tries["kill "+strconv.Itoa(*killPID)] = signal(*killPID)
	}
	for _, a := range starterArgs {
		tries["starter "+a] = runStarter(*starter, *temporal, strings.Fields(a))
	}
	for _, a := range connects {
		tries["connect "+a] = connect(a)
	}
	for _, a := range proxied {
		tries["proxy "+a] = viaProxy(a)
	}
	data, _ := json.MarshalIndent(tries, "", "  ")
	if err := os.WriteFile("hostile.json", append(data, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
	fmt.Println("hostile: tried", len(tries), "escapes")
}

// scanEnviron reads /proc/*/environ of every process but its own for
// name=value.
func scanEnviron(name string) try {
	entries, _ := os.ReadDir("/proc")
	var found []string
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(data), "\x00") {
			if v, ok := strings.CutPrefix(kv, name+"="); ok && v != "" {
				found = append(found, e.Name()+":"+v)
			}
		}
	}
	return try{OK: len(found) > 0, Detail: fmt.Sprintf("%d processes visible; %s", len(entries), strings.Join(found, " "))}
}

func read(p string) try {
	fi, err := os.Stat(p)
	if err != nil {
		return try{Detail: err.Error()}
	}
	if fi.IsDir() {
		entries, err := os.ReadDir(p)
		if err != nil || len(entries) == 0 {
			return try{Detail: fmt.Sprintf("directory with %d entries: %v", len(entries), err)}
		}
		return try{OK: true, Detail: fmt.Sprintf("directory with %d entries", len(entries))}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return try{Detail: err.Error()}
	}
	return try{OK: true, Detail: string(data)}
}

func appendTo(p string) try {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return try{Detail: err.Error()}
	}
	defer f.Close()
	if _, err := f.WriteString("# written by a hostile agent\n"); err != nil {
		return try{Detail: err.Error()}
	}
	// Inside a sandbox this lands on its private view: the test looks
	// at the host's file.
	return try{OK: true, Detail: "appended"}
}

func signal(pid int) try {
	if err := syscall.Kill(pid, 0); err != nil {
		return try{Detail: err.Error()}
	}
	return try{OK: true, Detail: "signal 0 delivered"}
}

func runStarter(bin, addr string, args []string) try {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+addr)
	out, err := cmd.CombinedOutput()
	detail := strings.TrimSpace(string(out))
	if len(detail) > 400 {
		detail = detail[:400]
	}
	if err != nil {
		return try{Detail: err.Error() + ": " + detail}
	}
	return try{OK: true, Detail: detail}
}

func connect(addr string) try {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return try{Detail: err.Error()}
	}
	c.Close()
	return try{OK: true, Detail: "connected"}
}

// viaProxy asks $HTTPS_PROXY to CONNECT to addr.
func viaProxy(addr string) try {
	p := os.Getenv("HTTPS_PROXY")
	if p == "" {
		return try{Detail: "no HTTPS_PROXY"}
	}
	u, err := url.Parse(p)
	if err != nil {
		return try{Detail: err.Error()}
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		return try{Detail: err.Error()}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return try{Detail: err.Error()}
	}
	status = strings.TrimSpace(status)
	return try{OK: strings.Contains(status, " 200"), Detail: status}
}
