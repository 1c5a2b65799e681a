//go:build tools

// Package sandbox pins the Cluster API manager, which we build straight from
// its module (`go build sigs.k8s.io/cluster-api/core`): its main package cannot be
// imported, and building it in this module shares the compile cache with
// kapstan-sandbox.
package sandbox

import _ "sigs.k8s.io/cluster-api/core"
