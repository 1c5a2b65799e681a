package main

// The workload file that bench/peers/export.py writes, decoded into Karpenter's own types.
// Pods, DaemonSet pods and NodePools are ordinary Kubernetes JSON; flavors are a small flat form
// that becomes cloudprovider.InstanceType here, so no Python code has to know Karpenter's Go structs.

import (
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

type offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    bool    `json:"available"`
}

type flavor struct {
	Name string `json:"name"`
	// Capacity and allocatable in Kubernetes quantity strings. Karpenter derives allocatable from
	// capacity minus overhead, so the difference becomes KubeReserved.
	Capacity    map[string]string `json:"capacity"`
	Allocatable map[string]string `json:"allocatable"`
	// Labels every node of the flavor carries (arch, os, instance-type, custom ones).
	Labels    map[string]string `json:"labels"`
	Offerings []offering        `json:"offerings"`
}

type workload struct {
	Name          string         `json:"name"`
	Pods          []*corev1.Pod  `json:"pods"`
	DaemonSetPods []*corev1.Pod  `json:"daemonSetPods"`
	NodePools     []*v1.NodePool `json:"nodePools"`
	// Flavors each NodePool may use, by name; a pool missing here may use every flavor.
	PoolFlavors map[string][]string `json:"poolFlavors"`
	Flavors     []flavor            `json:"flavors"`
}

func readWorkload(path string) (*workload, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	w := &workload{}
	if err := json.Unmarshal(raw, w); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	for _, p := range w.Pods {
		// The scheduler caches per-pod data by UID, as its own benchmark notes; a stable UID from the
		// pod's key keeps runs identical.
		if p.UID == "" {
			p.UID = types.UID(p.Namespace + "/" + p.Name)
		}
	}
	return w, nil
}

func quantities(in map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for k, v := range in {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("resource %s=%q: %w", k, v, err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// instanceType builds the flavor the way a cloud provider reports it: a requirement for every label, one
// offering per zone and capacity type. With zeroPrices every offering costs 0, as the upstream CAPI
// provider reports it.
func (f flavor) instanceType(zeroPrices bool) (*cloudprovider.InstanceType, error) {
	capacity, err := quantities(f.Capacity)
	if err != nil {
		return nil, fmt.Errorf("flavor %s: %w", f.Name, err)
	}
	allocatable, err := quantities(f.Allocatable)
	if err != nil {
		return nil, fmt.Errorf("flavor %s: %w", f.Name, err)
	}
	reserved := corev1.ResourceList{}
	for name, c := range capacity {
		if a, ok := allocatable[name]; ok && a.Cmp(c) < 0 {
			d := c.DeepCopy()
			d.Sub(a)
			reserved[name] = d
		}
	}
	reqs := scheduling.NewRequirements()
	for k, v := range f.Labels {
		reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	var zones, capacityTypes []string
	var offerings cloudprovider.Offerings
	for _, o := range f.Offerings {
		price := o.Price
		if zeroPrices {
			price = 0
		}
		offerings = append(offerings, &cloudprovider.Offering{
			Requirements: scheduling.NewLabelRequirements(map[string]string{
				v1.CapacityTypeLabelKey:  o.CapacityType,
				corev1.LabelTopologyZone: o.Zone,
			}),
			Price:     price,
			Available: o.Available,
		})
		if o.Available {
			zones = append(zones, o.Zone)
			capacityTypes = append(capacityTypes, o.CapacityType)
		}
	}
	reqs.Add(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
	reqs.Add(scheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityTypes...))
	return &cloudprovider.InstanceType{
		Name:         f.Name,
		Requirements: reqs,
		Offerings:    offerings,
		Capacity:     capacity,
		Overhead:     &cloudprovider.InstanceTypeOverhead{KubeReserved: reserved},
	}, nil
}
