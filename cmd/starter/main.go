// Command starter is the command line people type to run and watch Durable
// Ralph sessions:
//
//	starter init [DIR]                     a commented ralph.yaml and an example prd.json, committed
//	starter trust [DIR] | --list | --revoke DIR   trust the commands DIR's ralph.yaml sets
//	starter run [DIR] [--follow] [--dev]   start (or attach to) the session for DIR
//	starter prompt [DIR]                   the prompt the next iteration would get
//	starter status [DIR|ID] [-o json]      everything the session's status query knows
//	starter list [--status STATE] [-o json]   sessions and their state
//	starter stop [DIR|ID]                  finish the current iteration, then end
//	starter respond [DIR|ID] --approve | --reject [--reason R] | --answer TEXT
//	starter guide [DIR|ID] TEXT            add guidance to the next prompt
//	starter pause|resume [DIR|ID]
//	starter set-limits [DIR|ID] [--max-iterations N] [--max-runtime D] [--max-cost USD]
//	starter queue [DIR] [--follow] [--until-idle]   the GitHub issue queue of a clone
//	starter poke [ID|--queue DIR]          an idle queue looks for issues now
//	starter dev start|status|stop|logs     the Temporal dev server of the state directory
//
// It connects like the temporal CLI (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_PROFILE) and, when those name no server, to the Temporal dev
// server of the state directory (starter dev status|stop|logs). With --dev a
// command starts that server in the background when none runs, and run is a
// worker itself when none runs for this host. Every other setting is
// described in package config.
//
// The command line is data, as the temporal CLI's commands.yaml is: the
// table in commands.go names every command, and each is a struct that
// holds its own flags and runs with the commandContext all of them share.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first interrupt ends the command gracefully (a worker in
		// this process lets its agent stop); a second one ends it at once.
		<-sigs
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "Stopped at once: the session is saved, and its iteration resumes on the next run.")
		os.Exit(130)
	}()
	code := execute(&commandContext{Context: ctx, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	signal.Stop(sigs)
	cancel()
	os.Exit(code)
}

// execute runs the command line args with cctx and returns the exit
// status, having printed the error, if any, to cctx.stderr.
func execute(cctx *commandContext, args []string) int {
	root := newRootCmd(cctx)
	root.SetArgs(args)
	return cctx.exitCode(root.ExecuteContext(cctx))
}
