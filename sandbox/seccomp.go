//go:build linux

package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// refused are the system calls a contained run may not make: they
// change what the run sees of the machine (mounts, namespaces, the
// root), reach past its view (file handles, other processes' memory,
// the kernel keyring, which no namespace covers), or are kernel surface
// no agent needs (BPF, perf events, io_uring, module loading, reboot).
// Each fails with EPERM. Bubblewrap drops every capability besides
// (--cap-drop ALL in a user namespace of its own); this is the second
// wall, for what a user namespace still allows.
var refused = []string{
	"mount", "umount2", "pivot_root", "chroot",
	"mount_setattr", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
	"unshare", "setns",
	"open_by_handle_at", "name_to_handle_at",
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "lookup_dcookie", "syslog",
}

// refusedOn are the refused calls that exist on one architecture only.
var refusedOn = map[string][]string{
	"amd64": {"iopl", "ioperm", "modify_ldt", "uselib"},
}

// auditArch is the architecture seccomp_data.arch names for a
// GOARCH the filter is written for.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// namespaceFlags are clone's flags that make a namespace: refused, as
// unshare is.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

var (
	filterOnce  sync.Once
	filterBytes []byte
	filterErr   error
)

// Filter is the seccomp program of a contained run, as bubblewrap reads
// it (--add-seccomp-fd): an array of struct sock_filter. The calls in
// refused fail with EPERM; clone with a namespace flag does too; clone3,
// whose flags a filter cannot read, fails with ENOSYS, on which the C
// library and libuv fall back to clone. A call of another architecture
// than the worker's (i386's int 0x80 on x86_64) kills the process: the
// numbers of the filter are the native ones.
func Filter() ([]byte, error) {
	filterOnce.Do(func() { filterBytes, filterErr = buildFilter(runtime.GOARCH) })
	return filterBytes, filterErr
}

func buildFilter(goarch string) ([]byte, error) {
	arch, ok := auditArch[goarch]
	if !ok {
		return nil, fmt.Errorf("no seccomp filter for %s", goarch)
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: append(append([]string(nil), refused...), refusedOn[goarch]...)},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{
				Name:       "clone",
				Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags}},
			}}},
		},
	}
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	// The library lets a call of a foreign architecture through to the
	// default action (allow): the gate kills it first.
	gate := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}
	raw, err := bpf.Assemble(append(gate, body...))
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	var buf bytes.Buffer
	for _, ins := range raw {
		// struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; }
		_ = binary.Write(&buf, binary.NativeEndian, ins)
	}
	return buf.Bytes(), nil
}

// filterFile is a pipe holding the filter, to be read by bubblewrap: the
// read end, whose write end is closed.
func filterFile() (*os.File, error) {
	prog, err := Filter()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	// A pipe holds 64 KiB; the filter is a few hundred bytes.
	_, err = w.Write(prog)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	return r, nil
}
