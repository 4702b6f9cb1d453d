package builtin

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestEnumTable(t *testing.T) {
	for typ, values := range enums {
		if typ.Kind() != reflect.String || !strings.HasPrefix(typ.PkgPath(), "k8s.io/api/") {
			t.Errorf("%v: not a string type of k8s.io/api", typ)
		}
		if len(values) < 2 || slices.Contains(values, "") {
			t.Errorf("%v: values %q: want two or more, none empty", typ, values)
		}
		if got, ok := EnumValues(typ); !ok || !slices.Equal(got, values) {
			t.Errorf("EnumValues(%v) = %q, %t", typ, got, ok)
		}
	}
	if _, ok := EnumValues(reflect.TypeFor[corev1.TolerationOperator]()); ok {
		t.Error("TolerationOperator is an enum: the API server lists other values for Lt and Gt")
	}
}

// TestEnumErrors is the walk's own test; the conformance test holds the
// messages to a real API server's.
func TestEnumErrors(t *testing.T) {
	for _, tc := range []struct {
		name, obj string
		want      []string
	}{{
		name: "deployment",
		obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}},
			spec: {dnsPolicy: ClusterFirst, initContainers: [{name: init, image: busybox, imagePullPolicy: never}],
			containers: [{name: web, image: nginx, imagePullPolicy: "", terminationMessagePolicy: File, ports: [{containerPort: 80, protocol: tcp}]}]}}}}`,
		want: []string{
			`spec.template.spec.initContainers[0].imagePullPolicy: Unsupported value: "never": supported values: "Always", "IfNotPresent", "Never"`,
			`spec.template.spec.containers[0].ports[0].protocol: Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"`,
		},
	}, {
		name: "a pointer set to empty, and access modes at their list",
		obj: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: postgres}]}},
			volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce, rwx], volumeMode: '', resources: {requests: {storage: 1Gi}}}}]}}`,
		want: []string{
			`spec.volumeClaimTemplates[0].spec.accessModes: Unsupported value: "rwx": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`,
			`spec.volumeClaimTemplates[0].spec.volumeMode: Unsupported value: "": supported values: "Block", "Filesystem"`,
		},
	}, {
		name: "a kind's own rule",
		obj:  `{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: np}, spec: {podSelector: {}, policyTypes: [ingress], egress: [{ports: [{protocol: udp}]}]}}`,
		want: []string{
			`spec.egress[0].ports[0].protocol: Unsupported value: "udp": supported values: "TCP", "UDP", "SCTP"`,
			`spec.policyTypes[0]: Unsupported value: "ingress": supported values: "Ingress", "Egress"`,
		},
	}, {
		name: "a strategy, refused at the strategy",
		obj:  `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {strategy: {type: rollingupdate, rollingUpdate: {maxSurge: 25%}}, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}}`,
		want: []string{
			`spec.strategy: Unsupported value: {"Type":"rollingupdate","RollingUpdate":{"MaxUnavailable":0,"MaxSurge":"25%"}}: supported values: "Recreate", "RollingUpdate"`,
		},
	}, {
		name: "valid",
		obj: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, externalTrafficPolicy: Local, internalTrafficPolicy: Cluster, sessionAffinity: None,
			ports: [{port: 80, protocol: SCTP}]}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.obj), &u.Object); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range Validate(u) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHoldsEnum(t *testing.T) {
	// tree holds itself, and an enum only through its other field.
	type tree struct {
		Children []tree
		Policy   corev1.PullPolicy
	}
	type loop struct{ Next *loop }
	for typ, want := range map[reflect.Type]bool{
		reflect.TypeFor[metav1.ObjectMeta](): false,
		reflect.TypeFor[corev1.PodSpec]():    true,
		reflect.TypeFor[*corev1.Container](): true,
		reflect.TypeFor[corev1.ConfigMap]():  false,
		reflect.TypeFor[[]tree]():            true,
		reflect.TypeFor[loop]():              false,
		reflect.TypeFor[corev1.PodPhase]():   false,
	} {
		if got := holdsEnum(typ); got != want {
			t.Errorf("holdsEnum(%v) = %t, want %t", typ, got, want)
		}
	}
}
