package main

import (
	"flag"
	"fmt"
	"os"

	"kapstan.dev/sandbox/provider"
)

// runProvider runs kapstan's test Cluster API provider ("capt").
func runProvider() int {
	fs := flag.NewFlagSet("capt", flag.ExitOnError)
	var opts provider.Options
	fs.StringVar(&opts.ManagementKubeconfig, "kubeconfig", "", "kubeconfig of the management cluster")
	fs.StringVar(&opts.WorkloadKubeconfig, "workload-kubeconfig", "", "kubeconfig of the workload cluster")
	fs.StringVar(&opts.HealthAddr, "health-addr", "127.0.0.1:0", "address of /healthz and /readyz")
	fs.StringVar(&opts.ProviderIDPrefix, "provider-id-prefix", "kapstan", "scheme of the providerIDs set on Nodes")
	printCRDs := fs.Bool("print-crds", false, "print the provider's CRDs and exit")
	_ = fs.Parse(os.Args[1:])
	if *printCRDs {
		fmt.Print(provider.CRDs)
		return 0
	}
	if err := provider.Run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "capt:", err)
		return 1
	}
	return 0
}
