// Command karpenter-peer runs Karpenter's provisioning scheduler (sigs.k8s.io/karpenter, the library its
// providers embed) on one kapstan benchmark workload and prints what it decided as JSON.
//
// It sets the scheduler up the way Karpenter's own scheduling benchmark does
// (pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go): a fake cloud provider, an empty
// cluster state, a fake kube client, NumConcurrentReconciles(5); but with our flavors, DaemonSets and
// NodePools, and with a fresh topology and scheduler for every repetition, because a provisioning loop
// builds both anew for every batch.
//
// Usage: karpenter-peer -workload FILE [-repeat N] [-budget SECONDS] [-zero-prices]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/logging"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	karpsched "sigs.k8s.io/karpenter/pkg/scheduling"
)

type option struct {
	Name string `json:"name"`
	// The cheapest available offering of this flavor that the claim's requirements admit, at the
	// workload's real prices (even with -zero-prices).
	Price        float64 `json:"price"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
}

type claim struct {
	NodePool string   `json:"nodePool"`
	Pods     []string `json:"pods"`
	// Every flavor the claim may still launch as, in the order Karpenter hands them to the cloud
	// provider (cheapest first by the prices the scheduler saw).
	Options []option `json:"options"`
	// Single-valued requirements of the claim: the labels its node is sure to carry.
	Labels map[string]string `json:"labels"`
}

type run struct {
	SetupSeconds float64 `json:"setupSeconds"`
	SolveSeconds float64 `json:"solveSeconds"`
}

type output struct {
	Workload      string            `json:"workload"`
	Karpenter     string            `json:"karpenter"`
	GoVersion     string            `json:"goVersion"`
	ZeroPrices    bool              `json:"zeroPrices"`
	Runs          []run             `json:"runs"`
	NodeClaims    []claim           `json:"nodeClaims"`
	Unschedulable map[string]string `json:"unschedulable"`
}

// karpenterVersion is the module version in go.mod; tests/bench/test_peers_karpenter.py checks they agree.
const karpenterVersion = "v1.14.1"

func main() {
	path := flag.String("workload", "", "workload JSON written by bench/peers/export.py")
	repeat := flag.Int("repeat", 3, "timed solves; the first one's result is reported")
	budget := flag.Float64("budget", 0, "stop repeating once the runs so far plus one more would pass this many seconds (0: no limit)")
	zeroPrices := flag.Bool("zero-prices", false, "every offering priced 0, as the upstream CAPI provider reports")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "karpenter-peer: -workload is required")
		os.Exit(2)
	}
	out, err := solveWorkload(*path, max(*repeat, 1), *budget, *zeroPrices)
	if err != nil {
		fmt.Fprintf(os.Stderr, "karpenter-peer: %v\n", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "karpenter-peer: writing output: %v\n", err)
		os.Exit(1)
	}
}

func solveWorkload(path string, repeat int, budget float64, zeroPrices bool) (*output, error) {
	log.SetLogger(logging.NopLogger)
	w, err := readWorkload(path)
	if err != nil {
		return nil, err
	}
	ctx := options.ToContext(injection.WithControllerName(context.Background(), "provisioner"), benchmarkOptions())
	out := &output{
		Workload: w.Name, Karpenter: karpenterVersion, GoVersion: runtime.Version(), ZeroPrices: zeroPrices,
		Unschedulable: map[string]string{},
	}
	spent := 0.0
	for i := 0; i < repeat; i++ {
		// The same rule as kapstan's side (bench/targets.py): slow cases get fewer repetitions.
		if i > 0 && budget > 0 && spent+out.Runs[0].SolveSeconds > budget {
			break
		}
		// Instance types carry caches (allocatable per offering); fresh ones keep each run cold.
		byPool, err := poolFlavors(w, zeroPrices)
		if err != nil {
			return nil, err
		}
		// Collect garbage from the previous run outside the timed region, so runs start alike.
		runtime.GC()
		started := time.Now()
		scheduler, err := newScheduler(ctx, w, byPool)
		if err != nil {
			return nil, err
		}
		setup := time.Since(started)
		started = time.Now()
		results, err := scheduler.Solve(ctx, w.Pods)
		solve := time.Since(started)
		if err != nil {
			return nil, fmt.Errorf("solve: %w", err)
		}
		out.Runs = append(out.Runs, run{SetupSeconds: setup.Seconds(), SolveSeconds: solve.Seconds()})
		spent += solve.Seconds()
		if i == 0 {
			out.NodeClaims = describe(results, w)
			for pod, perr := range results.PodErrors {
				out.Unschedulable[pod.Namespace+"/"+pod.Name] = perr.Error()
			}
		}
	}
	return out, nil
}

func benchmarkOptions() *options.Options {
	// The values Karpenter's test.Options() gives its benchmark; written out so that this program does
	// not link Karpenter's test helpers.
	return &options.Options{
		CPURequests:       5000,
		BatchMaxDuration:  10 * time.Second,
		BatchIdleDuration: time.Second,
		MemoryLimit:       -1,
		PreferencePolicy:  options.PreferencePolicyRespect,
		MinValuesPolicy:   options.MinValuesPolicyStrict,
		IgnoreDRARequests: true,
		FeatureGates:      options.FeatureGates{ReservedCapacity: true},
	}
}

func poolFlavors(w *workload, zeroPrices bool) (map[string][]*cloudprovider.InstanceType, error) {
	all := map[string]*cloudprovider.InstanceType{}
	var order []string
	for _, f := range w.Flavors {
		it, err := f.instanceType(zeroPrices)
		if err != nil {
			return nil, err
		}
		all[f.Name] = it
		order = append(order, f.Name)
	}
	byPool := map[string][]*cloudprovider.InstanceType{}
	for _, np := range w.NodePools {
		names, ok := w.PoolFlavors[np.Name]
		if !ok {
			names = order
		}
		for _, n := range names {
			it, ok := all[n]
			if !ok {
				return nil, fmt.Errorf("nodepool %s names unknown flavor %s", np.Name, n)
			}
			byPool[np.Name] = append(byPool[np.Name], it)
		}
	}
	return byPool, nil
}

func newScheduler(
	ctx context.Context, w *workload, byPool map[string][]*cloudprovider.InstanceType,
) (*scheduling.Scheduler, error) {
	provider := fake.NewCloudProvider()
	client := fakecr.NewFakeClient()
	clk := &clock.RealClock{}
	cluster := state.NewCluster(clk, client, provider)
	opts := []scheduling.Options{scheduling.NumConcurrentReconciles(5)}
	topology, err := scheduling.NewTopology(ctx, client, cluster, nil, w.NodePools, byPool, w.Pods, opts...)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	recorder := events.NewRecorder(&record.FakeRecorder{})
	return scheduling.NewScheduler(
		ctx, client, w.NodePools, cluster, nil, topology, byPool, w.DaemonSetPods, recorder, clk, nil, nil, opts...,
	), nil
}

func describe(results scheduling.Results, w *workload) []claim {
	real := map[string][]offering{}
	for _, f := range w.Flavors {
		real[f.Name] = f.Offerings
	}
	var out []claim
	for _, nc := range results.NewNodeClaims {
		c := claim{NodePool: nc.NodePoolName, Labels: map[string]string{}}
		for _, p := range nc.Pods {
			c.Pods = append(c.Pods, p.Namespace+"/"+p.Name)
		}
		for key := range nc.Requirements.Keys() {
			r := nc.Requirements.Get(key)
			if r.Operator() == corev1.NodeSelectorOpIn && r.Len() == 1 && key != corev1.LabelHostname {
				c.Labels[key] = r.Any()
			}
		}
		for _, it := range nc.InstanceTypeOptions.OrderByPrice(nc.Requirements) {
			if o, ok := cheapest(real[it.Name], nc.Requirements); ok {
				c.Options = append(c.Options, option{Name: it.Name, Price: o.Price, Zone: o.Zone, CapacityType: o.CapacityType})
			}
		}
		out = append(out, c)
	}
	// Karpenter's order of new claims follows its internal queue; sorting by first pod makes the output
	// stable to diff.
	sort.SliceStable(out, func(i, j int) bool { return first(out[i].Pods) < first(out[j].Pods) })
	return out
}

func first(pods []string) string {
	if len(pods) == 0 {
		return ""
	}
	return pods[0]
}

// cheapest is the offering a reference provider launches for the claim: available, admitted by the
// claim's zone and capacity-type requirements, lowest price.
func cheapest(offerings []offering, reqs karpsched.Requirements) (offering, bool) {
	best, found := offering{}, false
	for _, o := range offerings {
		labels := karpsched.NewLabelRequirements(map[string]string{
			v1.CapacityTypeLabelKey:  o.CapacityType,
			corev1.LabelTopologyZone: o.Zone,
		})
		if !o.Available || !reqs.IsCompatible(labels, karpsched.AllowUndefinedWellKnownLabels) {
			continue
		}
		if !found || o.Price < best.Price {
			best, found = o, true
		}
	}
	return best, found
}
