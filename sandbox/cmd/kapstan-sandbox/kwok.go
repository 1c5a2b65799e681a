package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeatwithlease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/cmd"
	"sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
)

// runKwok starts kwok, the fake kubelet that keeps our Nodes Ready and our
// Pods Running. kwok reads its global flags (logging, --config) from a
// flag set of its own before the cobra command parses the rest.
func runKwok() int {
	// The Kubernetes components linked into this binary register global
	// flags (e.g. a non-bool --version) that cobra would merge into kwok's
	// command and trip over; kwok expects a clean global flag set.
	pflag.CommandLine = pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)

	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	global.ParseErrorsAllowlist.UnknownFlags = true
	global.Usage = func() {}

	ctx := signals.SetupSignalContext()
	ctx, logger := log.InitFlags(ctx, global)
	ctx, err := config.InitFlags(ctx, global)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	command := cmd.NewCommand(ctx)
	command.PersistentFlags().AddFlagSet(global)
	if err := command.ExecuteContext(ctx); err != nil {
		logger.Error("kwok exited", "err", err)
		return 1
	}
	return 0
}

// runKwokConfig prints a kwok configuration made of the stages kwok itself
// ships as defaults (node init, node heartbeat with lease, pod ready /
// complete / delete). kwok only applies built-in stages when started by
// kwokctl, so the bare controller needs them handed over in --config.
func runKwokConfig() int {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodeheartbeatwithlease.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for _, d := range docs {
		fmt.Println("---")
		fmt.Println(strings.TrimSpace(d))
	}
	return 0
}
