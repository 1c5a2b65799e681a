// Package provider is kapstan's test Cluster API provider: infrastructure
// (TestCluster, TestMachine), control plane (TestControlPlane) and bootstrap
// (it answers the real KubeadmConfig) in one small manager. It exists so the
// real Cluster API controllers can run on a laptop with no cloud: a
// TestMachine "boots" after a delay by creating its Node in the workload
// cluster, where kwok keeps it Ready.
//
// Objects are handled as unstructured data read through the provider
// contract's paths, the way Cluster API itself reads providers, so no
// generated Go types are needed.
package provider

import (
	_ "embed"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// CRDs are the CustomResourceDefinitions of the provider's own kinds.
//
//go:embed crds.yaml
var CRDs string

// Options configure the provider manager.
type Options struct {
	// ManagementKubeconfig reaches the cluster holding the CAPI objects.
	ManagementKubeconfig string
	// WorkloadKubeconfig reaches the cluster where Nodes are created; it is
	// also what the provider publishes as each Cluster's <name>-kubeconfig
	// Secret, the way a control plane provider would.
	WorkloadKubeconfig string
	// HealthAddr serves /healthz and /readyz.
	HealthAddr string
	// ProviderIDPrefix starts every providerID the provider sets.
	ProviderIDPrefix string
}

var (
	clusterGVK         = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	machineGVK         = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
	kubeadmConfigGVK   = schema.GroupVersionKind{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmConfig"}
	testClusterGVK     = schema.GroupVersionKind{Group: "infrastructure.kapstan.dev", Version: "v1alpha1", Kind: "TestCluster"}
	testMachineGVK     = schema.GroupVersionKind{Group: "infrastructure.kapstan.dev", Version: "v1alpha1", Kind: "TestMachine"}
	testMachineTmplGVK = schema.GroupVersionKind{Group: "infrastructure.kapstan.dev", Version: "v1alpha1", Kind: "TestMachineTemplate"}
	testCPGVK          = schema.GroupVersionKind{Group: "controlplane.kapstan.dev", Version: "v1alpha1", Kind: "TestControlPlane"}
)

// apiQPS and apiBurst rate-limit the provider's clients as Cluster API's
// own manager is by default (--kube-api-qps 100, --kube-api-burst 200): at
// client-go's defaults (5 / 10, what a rest.Config left at zero gets) the
// Nodes of a 45-Machine scale-up came 41-55 s after their bootstrap data (p50)
// with a 10 s boot delay (bench.live's critical path): a provider far
// slower than Cluster API's controllers around it.
const (
	apiQPS   = 100
	apiBurst = 200
)

// concurrency is how many objects of one kind each reconciler handles at
// once, as Cluster API's machine controller (--machine-concurrency 100);
// controller-runtime's default of one made every TestMachine and bootstrap
// config of a scale-up wait behind the others.
const concurrency = 100

// requeue is how often a waiting object is looked at again; short because
// the sandbox is small and tests wait on it.
const requeue = time.Second

func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// Run starts the manager and blocks until it stops.
func Run(opts Options) error {
	ctx := ctrl.SetupSignalHandler()
	mgmtCfg, err := clientcmd.BuildConfigFromFlags("", opts.ManagementKubeconfig)
	if err != nil {
		return fmt.Errorf("management kubeconfig: %w", err)
	}
	workloadCfg, err := clientcmd.BuildConfigFromFlags("", opts.WorkloadKubeconfig)
	if err != nil {
		return fmt.Errorf("workload kubeconfig: %w", err)
	}
	for _, cfg := range []*rest.Config{mgmtCfg, workloadCfg} {
		cfg.QPS, cfg.Burst = apiQPS, apiBurst
	}
	workloadKubeconfig, err := os.ReadFile(opts.WorkloadKubeconfig)
	if err != nil {
		return err
	}
	workload, err := client.New(workloadCfg, client.Options{})
	if err != nil {
		return fmt.Errorf("workload client: %w", err)
	}
	mgr, err := ctrl.NewManager(mgmtCfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: opts.HealthAddr,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
		return err
	}
	c := mgr.GetClient()
	reconcilers := []struct {
		gvk schema.GroupVersionKind
		r   reconcileFunc
	}{
		{clusterGVK, (&clusterReconciler{c: c, kubeconfig: workloadKubeconfig}).reconcile},
		{testClusterGVK, (&testClusterReconciler{c: c}).reconcile},
		{testCPGVK, (&controlPlaneReconciler{c: c}).reconcile},
		{testMachineTmplGVK, (&machineTemplateReconciler{c: c}).reconcile},
		{kubeadmConfigGVK, (&bootstrapReconciler{c: c}).reconcile},
		{testMachineGVK, (&machineReconciler{c: c, workload: workload, prefix: opts.ProviderIDPrefix}).reconcile},
	}
	for _, r := range reconcilers {
		if err := register(mgr, r.gvk, r.r); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}
