// Command kapstan-sandbox is one binary for every process of the local
// sandbox. Linking kube-apiserver, kube-controller-manager, kube-scheduler,
// etcd and kwok into one executable lets a single `go build` compile their
// shared dependencies (client-go, apimachinery, grpc, ...) once, which is
// what makes a cold build fit on a two-core machine.
//
// Usage: kapstan-sandbox <component> [flags...], or call it through a
// symlink named after the component.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// components maps a component name to its entry point. Each entry point
// reads its arguments from os.Args, rewritten so that os.Args[0] is the
// component name, exactly as if it were its own binary.
var components = map[string]func() int{
	"etcd":                    runEtcd,
	"kube-apiserver":          runAPIServer,
	"kube-controller-manager": runControllerManager,
	"kube-scheduler":          runScheduler,
	"kwok":                    runKwok,
	"kwok-config":             runKwokConfig,
	"capt":                    runProvider,
	"certs":                   runCerts,
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := components[name]; !ok {
		if len(os.Args) < 2 {
			usage()
		}
		name = os.Args[1]
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	run, ok := components[name]
	if !ok {
		usage()
	}
	os.Exit(run())
}

func usage() {
	names := make([]string, 0, len(components))
	for n := range components {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: kapstan-sandbox COMPONENT [flags]\ncomponents: %v\n", names)
	os.Exit(2)
}
