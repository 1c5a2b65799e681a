package main

import (
	"k8s.io/component-base/cli"
	// Register the JSON log format and the client-go/version metrics, as
	// the upstream binaries do, so flags and /metrics behave the same.
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func runAPIServer() int         { return cli.Run(apiserver.NewAPIServerCommand()) }
func runControllerManager() int { return cli.Run(controllermanager.NewControllerManagerCommand()) }
func runScheduler() int         { return cli.Run(scheduler.NewSchedulerCommand()) }
