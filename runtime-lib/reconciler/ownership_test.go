package reconciler

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestDescribeOwner: the writer named is the one that made the object,
// not the controller that writes its status; an owner reference to the
// custom resource itself says its labels were removed.
func TestDescribeOwner(t *testing.T) {
	cr := &unstructured.Unstructured{}
	cr.SetKind("Thing")
	cr.SetUID("cr-uid")
	now := metav1.NewTime(time.Now())
	earlier := metav1.NewTime(now.Add(-time.Minute))
	obj := &unstructured.Unstructured{}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &earlier},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: &now},
		{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate, Time: &earlier},
	})
	if got := describeOwner(obj, cr, "website", "inrun"); got != "it was created by kubectl-create, with no owner" {
		t.Errorf("describeOwner = %q, want kubectl-create", got)
	}
	obj.SetOwnerReferences([]metav1.OwnerReference{{Kind: "Thing", Name: "t2", UID: types.UID("cr-uid")}})
	if got := describeOwner(obj, cr, "website", "inrun"); !strings.Contains(got, "names this Thing as its owner, but Inrun never wrote it (created by kubectl-create): another controller") {
		t.Errorf("describeOwner = %q, want the other controller's object named as such", got)
	}
	obj.SetManagedFields(append(obj.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "inrun", Operation: metav1.ManagedFieldsOperationApply, Time: &earlier}))
	if got := describeOwner(obj, cr, "website", "inrun"); !strings.Contains(got, "names this Thing as its owner, but lacks the labels") {
		t.Errorf("describeOwner = %q, want the removed labels named", got)
	}
	// Made for this custom resource by another Blueprint (a rename).
	obj.SetLabels(map[string]string{LabelOwnerUID: "cr-uid", LabelBlueprint: "old-name"})
	if got := describeOwner(obj, cr, "website", "inrun"); !strings.Contains(got, `was made by Blueprint "old-name", not "website": the Blueprint was renamed, or another Blueprint reconciles this kind`) {
		t.Errorf("describeOwner = %q, want the other Blueprint named", got)
	}
}
