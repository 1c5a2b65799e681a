package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

// runEtcd hands over to etcd's own main; it exits the process itself.
func runEtcd() int {
	etcdmain.Main(os.Args)
	return 0
}
