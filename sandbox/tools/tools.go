//go:build tools

// Package tools pins controller-gen, which generates the Cluster API CRDs
// from the sigs.k8s.io/cluster-api/api module. It is a module of its own so
// its Kubernetes libraries do not have to agree with the sandbox binaries'.
// The version is the one Cluster API's own Makefile uses for this release.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
