package handwritten

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API of the Website kind (packs/website/manifests/crd.yaml).
var GroupVersion = schema.GroupVersion{Group: "example.inrun.dev", Version: "v1"}

var (
	// SchemeBuilder registers Website and WebsiteList.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the Website types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&Website{}, &WebsiteList{})
}

// WebsiteSpec is what a caller asks for. The CRD defaults every field.
type WebsiteSpec struct {
	Image    string `json:"image,omitempty"`
	Replicas int32  `json:"replicas,omitempty"`
	Port     int32  `json:"port,omitempty"`
}

// WebsiteStatus is what the operator reports.
type WebsiteStatus struct {
	ReadyReplicas      int32              `json:"readyReplicas"`
	URL                string             `json:"url,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// Website is a site served by a Deployment behind a Service.
type Website struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebsiteSpec   `json:"spec,omitempty"`
	Status WebsiteStatus `json:"status,omitempty"`
}

// WebsiteList is a list of Websites.
type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}

// DeepCopyInto copies w into out.
func (w *Website) DeepCopyInto(out *Website) {
	*out = *w
	out.TypeMeta = w.TypeMeta
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = w.Spec
	w.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of w.
func (w *Website) DeepCopy() *Website {
	if w == nil {
		return nil
	}
	out := new(Website)
	w.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *Website) DeepCopyObject() runtime.Object { return w.DeepCopy() }

// DeepCopyInto copies s into out.
func (s *WebsiteStatus) DeepCopyInto(out *WebsiteStatus) {
	*out = *s
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyObject implements runtime.Object.
func (l *WebsiteList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(WebsiteList)
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Website, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// websiteStatusApply is the apply configuration of a Website's status
// subresource: only the fields the operator owns.
type websiteStatusApply struct {
	metav1ac.TypeMetaApplyConfiguration    `json:",inline"`
	*metav1ac.ObjectMetaApplyConfiguration `json:"metadata,omitempty"`
	Status                                 *WebsiteStatus `json:"status,omitempty"`
}

// IsApplyConfiguration implements runtime.ApplyConfiguration.
func (websiteStatusApply) IsApplyConfiguration() {}

func statusApply(w *Website, status WebsiteStatus) *websiteStatusApply {
	return &websiteStatusApply{
		TypeMetaApplyConfiguration: *metav1ac.TypeMeta().
			WithAPIVersion(GroupVersion.String()).
			WithKind("Website"),
		ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().
			WithName(w.Name).
			WithNamespace(w.Namespace),
		Status: &status,
	}
}
