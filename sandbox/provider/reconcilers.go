package provider

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type reconcileFunc func(ctx context.Context, obj *unstructured.Unstructured) (ctrl.Result, error)

// register wires one reconcile function to the objects of one kind.
func register(mgr ctrl.Manager, gvk schema.GroupVersionKind, fn reconcileFunc) error {
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(strings.ToLower(gvk.Kind)).
		For(newObject(gvk)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			obj := newObject(gvk)
			if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			return fn(ctx, obj)
		}))
}

// patchStatus sets status fields (path -> value) and writes them with a
// merge patch, only when something changed.
func patchStatus(ctx context.Context, c client.Client, obj *unstructured.Unstructured, fields map[string]any) error {
	before := obj.DeepCopy()
	changed := false
	for path, value := range fields {
		keys := append([]string{"status"}, strings.Split(path, ".")...)
		old, found, _ := unstructured.NestedFieldNoCopy(obj.Object, keys...)
		if found && equalJSON(old, value) {
			continue
		}
		if err := unstructured.SetNestedField(obj.Object, value, keys...); err != nil {
			return err
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.MergeFrom(before))
}

func equalJSON(a, b any) bool {
	return strings.TrimSpace(toJSON(a)) == strings.TrimSpace(toJSON(b))
}

func ownerRef(obj *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         obj.GetAPIVersion(),
		Kind:               obj.GetKind(),
		Name:               obj.GetName(),
		UID:                obj.GetUID(),
		Controller:         new(true),
		BlockOwnerDeletion: new(true),
	}
}

// clusterReconciler publishes the workload cluster's kubeconfig as the
// Cluster's <name>-kubeconfig Secret: that Secret is how Cluster API (its
// ClusterCache, the Machine and ClusterResourceSet controllers) reaches a
// workload cluster, and a control plane provider normally writes it.
type clusterReconciler struct {
	c          client.Client
	kubeconfig []byte
}

func (r *clusterReconciler) reconcile(ctx context.Context, cluster *unstructured.Unstructured) (ctrl.Result, error) {
	if cluster.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            cluster.GetName() + "-kubeconfig",
			Namespace:       cluster.GetNamespace(),
			Labels:          map[string]string{"cluster.x-k8s.io/cluster-name": cluster.GetName()},
			OwnerReferences: []metav1.OwnerReference{ownerRef(cluster)},
		},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{"value": r.kubeconfig},
	}
	if err := r.c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// testClusterReconciler: the test infrastructure cluster is provisioned at once.
type testClusterReconciler struct{ c client.Client }

func (r *testClusterReconciler) reconcile(ctx context.Context, obj *unstructured.Unstructured) (ctrl.Result, error) {
	return ctrl.Result{}, patchStatus(ctx, r.c, obj, map[string]any{"initialization.provisioned": true})
}

// controlPlaneReconciler reports a control plane that is initialized,
// at its desired version and replicas, and externally managed: Cluster API
// then treats it like a managed Kubernetes service (no control plane
// Machines), which is also what lets the Machine controller delete the
// Nodes of worker Machines.
type controlPlaneReconciler struct{ c client.Client }

func (r *controlPlaneReconciler) reconcile(ctx context.Context, obj *unstructured.Unstructured) (ctrl.Result, error) {
	replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	version, _, _ := unstructured.NestedString(obj.Object, "spec", "version")
	return ctrl.Result{}, patchStatus(ctx, r.c, obj, map[string]any{
		"initialization.controlPlaneInitialized": true,
		"externalManagedControlPlane":            true,
		"version":                                version,
		"replicas":                               replicas,
		"readyReplicas":                          replicas,
		"availableReplicas":                      replicas,
		"upToDateReplicas":                       replicas,
	})
}

// machineTemplateReconciler copies the flavor's capacity to status.capacity,
// where autoscalers read it to scale a MachineDeployment from zero.
type machineTemplateReconciler struct{ c client.Client }

func (r *machineTemplateReconciler) reconcile(ctx context.Context, obj *unstructured.Unstructured) (ctrl.Result, error) {
	capacity, found, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec", "capacity")
	if !found {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, patchStatus(ctx, r.c, obj, map[string]any{"capacity": capacity})
}

// bootstrapReconciler plays the bootstrap provider for KubeadmConfigs
// owned by a Machine: it writes a (meaningless) bootstrap data Secret and
// reports it, per the bootstrap contract. The taints of the config are
// read later, when the Node registers.
type bootstrapReconciler struct{ c client.Client }

func (r *bootstrapReconciler) reconcile(ctx context.Context, cfg *unstructured.Unstructured) (ctrl.Result, error) {
	if cfg.GetDeletionTimestamp() != nil || !hasOwner(cfg, "Machine") {
		return ctrl.Result{}, nil
	}
	if name, _, _ := unstructured.NestedString(cfg.Object, "status", "dataSecretName"); name != "" {
		return ctrl.Result{}, nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            cfg.GetName(),
			Namespace:       cfg.GetNamespace(),
			Labels:          map[string]string{"cluster.x-k8s.io/cluster-name": cfg.GetLabels()["cluster.x-k8s.io/cluster-name"]},
			OwnerReferences: []metav1.OwnerReference{ownerRef(cfg)},
		},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{
			"value":  []byte("#cloud-config\n# kapstan sandbox: this machine is simulated\n"),
			"format": []byte("cloud-config"),
		},
	}
	if err := r.c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, patchStatus(ctx, r.c, cfg, map[string]any{
		"dataSecretName":                   secret.Name,
		"initialization.dataSecretCreated": true,
	})
}

func hasOwner(obj *unstructured.Unstructured, kind string) bool {
	_, ok := owner(obj, kind)
	return ok
}

func owner(obj *unstructured.Unstructured, kind string) (metav1.OwnerReference, bool) {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == kind && strings.HasPrefix(ref.APIVersion, "cluster.x-k8s.io/") {
			return ref, true
		}
	}
	return metav1.OwnerReference{}, false
}
