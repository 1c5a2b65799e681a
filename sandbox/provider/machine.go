package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// nodeFinalizer makes a TestMachine delete its Node on the way out,
	// as a cloud's node controller removes the Nodes of deleted VMs.
	nodeFinalizer = "infrastructure.kapstan.dev/node"
	// nodeNameAnnotation remembers the Node of a TestMachine once the
	// Machine that named it may be gone.
	nodeNameAnnotation = "infrastructure.kapstan.dev/node-name"
	// kwokAnnotation is what kwok is told to select the Nodes it manages by.
	kwokAnnotation = "kwok.x-k8s.io/node"
)

// machineReconciler boots TestMachines: once the owning Machine has its
// bootstrap data and the boot delay has passed, it registers a Node in the
// workload cluster (as a kubelet would: labels of the flavor, taints from
// the KubeadmConfig's joinConfiguration, capacity) and reports the machine
// provisioned with its providerID, per the infrastructure machine contract.
type machineReconciler struct {
	c        client.Client
	workload client.Client
	prefix   string
}

func (r *machineReconciler) reconcile(ctx context.Context, m *unstructured.Unstructured) (ctrl.Result, error) {
	if m.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, r.delete(ctx, m)
	}
	if !containsString(m.GetFinalizers(), nodeFinalizer) {
		before := m.DeepCopy()
		m.SetFinalizers(append(m.GetFinalizers(), nodeFinalizer))
		if err := r.c.Patch(ctx, m, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if provisioned, _, _ := unstructured.NestedBool(m.Object, "status", "initialization", "provisioned"); provisioned {
		return ctrl.Result{}, nil
	}
	ref, ok := owner(m, "Machine")
	if !ok {
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	machine := newObject(machineGVK)
	if err := r.c.Get(ctx, types.NamespacedName{Namespace: m.GetNamespace(), Name: ref.Name}, machine); err != nil {
		return ctrl.Result{RequeueAfter: requeue}, client.IgnoreNotFound(err)
	}
	if secret, _, _ := unstructured.NestedString(machine.Object, "spec", "bootstrap", "dataSecretName"); secret == "" {
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	delay, _, _ := unstructured.NestedInt64(m.Object, "spec", "bootDelaySeconds")
	if wait := time.Until(m.GetCreationTimestamp().Add(time.Duration(delay) * time.Second)); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	node, err := r.desiredNode(ctx, m, machine)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.workload.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("registering node %s: %w", node.Name, err)
	}

	before := m.DeepCopy()
	ann := m.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[nodeNameAnnotation] = node.Name
	m.SetAnnotations(ann)
	if err := unstructured.SetNestedField(m.Object, node.Spec.ProviderID, "spec", "providerID"); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.c.Patch(ctx, m, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, patchStatus(ctx, r.c, m, map[string]any{
		"initialization.provisioned": true,
		"addresses":                  []any{map[string]any{"type": "Hostname", "address": node.Name}},
	})
}

func (r *machineReconciler) desiredNode(ctx context.Context, m, machine *unstructured.Unstructured) (*corev1.Node, error) {
	name := machine.GetName()
	labels := map[string]string{
		"kubernetes.io/hostname": name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
	}
	if fd, _, _ := unstructured.NestedString(machine.Object, "spec", "failureDomain"); fd != "" {
		labels["topology.kubernetes.io/zone"] = fd
	}
	flavor, _, _ := unstructured.NestedStringMap(m.Object, "spec", "labels")
	for k, v := range flavor {
		labels[k] = v
	}
	version, _, _ := unstructured.NestedString(machine.Object, "spec", "version")
	instanceType, _, _ := unstructured.NestedString(m.Object, "spec", "instanceType")
	labels["node.kubernetes.io/instance-type"] = instanceType

	capacity := corev1.ResourceList{}
	raw, _, _ := unstructured.NestedMap(m.Object, "spec", "capacity")
	for k, v := range raw {
		q, err := resource.ParseQuantity(fmt.Sprint(v))
		if err != nil {
			return nil, fmt.Errorf("capacity %s of %s: %w", k, m.GetName(), err)
		}
		capacity[corev1.ResourceName(k)] = q
	}

	reg, err := r.nodeRegistration(ctx, machine)
	if err != nil {
		return nil, err
	}
	for k, v := range reg.labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{kwokAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{
			ProviderID: fmt.Sprintf("%s://%s/%s", r.prefix, m.GetNamespace(), name),
			Taints:     reg.taints,
		},
		// A kubelet registers its Node with capacity and allocatable
		// already set; kwok then only maintains conditions and heartbeats.
		// The kubelet reports the Machine's Kubernetes version; CAPI compares it with the
		// MachineDeployment's to decide whether the Machine is up to date (kwok keeps it).
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: version},
		},
	}, nil
}

type registration struct {
	taints []corev1.Taint
	labels map[string]string
}

// nodeRegistration reads what kubeadm would hand the kubelet from the
// Machine's KubeadmConfig: joinConfiguration.nodeRegistration.taints
// (--register-with-taints) and the node-labels kubelet argument.
func (r *machineReconciler) nodeRegistration(ctx context.Context, machine *unstructured.Unstructured) (registration, error) {
	var reg registration
	kind, _, _ := unstructured.NestedString(machine.Object, "spec", "bootstrap", "configRef", "kind")
	name, _, _ := unstructured.NestedString(machine.Object, "spec", "bootstrap", "configRef", "name")
	if kind != kubeadmConfigGVK.Kind || name == "" {
		return reg, nil
	}
	cfg := newObject(kubeadmConfigGVK)
	if err := r.c.Get(ctx, types.NamespacedName{Namespace: machine.GetNamespace(), Name: name}, cfg); err != nil {
		return reg, fmt.Errorf("bootstrap config of %s: %w", machine.GetName(), err)
	}
	nodeReg, _, _ := unstructured.NestedMap(cfg.Object, "spec", "joinConfiguration", "nodeRegistration")
	if raw, ok := nodeReg["taints"]; ok {
		if err := fromJSON(raw, &reg.taints); err != nil {
			return reg, fmt.Errorf("taints of %s: %w", name, err)
		}
	}
	var args []struct{ Name, Value string }
	if raw, ok := nodeReg["kubeletExtraArgs"]; ok {
		if err := fromJSON(raw, &args); err != nil {
			return reg, fmt.Errorf("kubeletExtraArgs of %s: %w", name, err)
		}
	}
	reg.labels = map[string]string{}
	for _, a := range args {
		if a.Name != "node-labels" {
			continue
		}
		for _, kv := range strings.Split(a.Value, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				reg.labels[k] = v
			}
		}
	}
	return reg, nil
}

func (r *machineReconciler) delete(ctx context.Context, m *unstructured.Unstructured) error {
	if !containsString(m.GetFinalizers(), nodeFinalizer) {
		return nil
	}
	if name := m.GetAnnotations()[nodeNameAnnotation]; name != "" {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := r.workload.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	before := m.DeepCopy()
	var kept []string
	for _, f := range m.GetFinalizers() {
		if f != nodeFinalizer {
			kept = append(kept, f)
		}
	}
	m.SetFinalizers(kept)
	return r.c.Patch(ctx, m, client.MergeFrom(before))
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func fromJSON(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
