package conformance_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/localcluster/clustertest"
)

// specCases are objects of built-in kinds, each valid (named ok...) or
// with one mistake builtin.Validate knows.
var specCases = []string{
	deployment(""),
	deployment("selector: {matchLabels: {app: other}}"),
	deployment("selector: null"),
	deployment("selector: {}"),
	deployment("restartPolicy: Never"),
	deployment("containers: []"),
	deployment("image: null"),
	deployment("containerName: Web_1"),
	deployment("secondContainer: web"),
	deployment("portName: http-metrics-port"),
	deployment("containerPort: 70000"),
	deployment("mountName: cache"),
	deployment("volumeName: Data"),
	deployment("cpuRequest: '2'"),
	deployment("secondVolume: data"),
	`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: db}, spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: other}}, spec: {containers: [{name: db, image: postgres}]}}}}`,
	// A StatefulSet's containers may mount its volumeClaimTemplates.
	`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: ok-claim-mount}, spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: postgres, volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]}]}}, volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}}`,
	`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: pod-checked}, spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: Db_1}]}}}}`,
	`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: restarts-never}, spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {restartPolicy: Never, containers: [{name: db, image: postgres}]}}}}`,
	`{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: ok}, spec: {podSelector: {}, policyTypes: [Ingress, Egress]}}`,
	`{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: lower-case}, spec: {podSelector: {}, policyTypes: [ingress, Egress]}}`,
	`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent}, spec: {selector: {}, template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: agent, image: agent}]}}}}`,
	`{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: rs}, spec: {selector: {}, template: {metadata: {labels: {app: rs}}, spec: {containers: [{name: rs, image: rs}]}}}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: ok}, spec: {template: {spec: {restartPolicy: Never, containers: [{name: job, image: busybox}]}}}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: no-restart-policy}, spec: {template: {spec: {containers: [{name: job, image: busybox}]}}}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: restarts-always}, spec: {template: {spec: {restartPolicy: Always, containers: [{name: job, image: busybox}]}}}}`,
	`{apiVersion: apps/v1, kind: Deployment, metadata: {name: ok-default-restart}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web, tier: front}}, spec: {containers: [{name: web, image: nginx}]}}}}`,
	`{apiVersion: batch/v1, kind: CronJob, metadata: {name: ok}, spec: {schedule: "*/5 * * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: job, image: busybox}]}}}}}}`,
	`{apiVersion: batch/v1, kind: CronJob, metadata: {name: four-fields}, spec: {schedule: "* * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: job, image: busybox}]}}}}}}`,
	`{apiVersion: batch/v1, kind: CronJob, metadata: {name: macro}, spec: {schedule: "@daily", concurrencyPolicy: forbid, jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: job, image: busybox}]}}}}}}`,
	`{apiVersion: batch/v1, kind: CronJob, metadata: {name: restarts-always}, spec: {schedule: "0 3 * * 1", jobTemplate: {spec: {template: {spec: {containers: [{name: job, image: busybox}]}}}}}}`,
	`{apiVersion: v1, kind: Pod, metadata: {name: ok}, spec: {restartPolicy: Never, containers: [{name: pod, image: busybox}]}}`,
	`{apiVersion: v1, kind: Pod, metadata: {name: bad-policy}, spec: {restartPolicy: never, containers: [{name: pod, image: busybox}]}}`,
	`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: ok}, spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}}`,
	`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: both}, spec: {minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {app: web}}}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: ok}, spec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}, {name: https, port: 443}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: ok-headless}, spec: {clusterIP: None, selector: {app: web}}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: ok-external}, spec: {type: ExternalName, externalName: db.example.com}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: unnamed}, spec: {ports: [{port: 80}, {port: 443}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: twice}, spec: {ports: [{name: http, port: 80}, {name: http, port: 8080}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: no-ports}, spec: {selector: {app: web}}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: node-port}, spec: {ports: [{port: 80, nodePort: 30080}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: bad-type}, spec: {type: Nodeport, ports: [{port: 80}]}}`,
	`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: ok-claim}, spec: {volumeMode: Filesystem, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`,
	`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: empty-volume-mode}, spec: {volumeMode: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`,
	`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: bad-access-mode}, spec: {accessModes: [RWX], resources: {requests: {storage: 1Gi}}}}`,
	`{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: empty-path-type}, spec: {rules: [{host: example.com, http: {paths: [{path: /, pathType: "", backend: {service: {name: web, port: {number: 80}}}}]}}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: bad-selector}, spec: {selector: {"bad key!": web, app: "not ok!"}, ports: [{port: 80}]}}`,
	`{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: bad-selectors}, spec: {podSelector: {matchLabels: {"bad key!": x}}, ingress: [{from: [{podSelector: {matchLabels: {"a/b/c": x}}}, {namespaceSelector: {matchExpressions: [{key: team, operator: in, values: [a]}]}}]}], egress: [{to: [{podSelector: {matchLabels: {app: "-x"}}}]}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: bad-port-name}, spec: {ports: [{name: HTTP, port: 80}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: bad-target}, spec: {ports: [{port: 80, targetPort: http-metrics-port}]}}`,
	ingress("ok", "host: '*.example.com'", "{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}"),
	ingress("no-path-type", "host: example.com", "{path: /, backend: {service: {name: web, port: {number: 80}}}}"),
	ingress("lower-path-type", "host: example.com", "{path: /, pathType: prefix, backend: {service: {name: web, port: {number: 80}}}}"),
	ingress("relative", "host: example.com", "{path: api, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}"),
	ingress("bad-host", "host: Example.com", "{path: /, pathType: Exact, backend: {service: {name: web, port: {number: 80}}}}"),
	`{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: empty}, spec: {}}`,
	ingress("empty-path-type", "host: example.com", "{path: /, pathType: '', backend: {service: {name: web, port: {number: 80}}}}"),

	// Enums (builtin.EnumValues): each kind of field, valid and not.
	pod("ok-enums", "dnsPolicy: Default, tolerations: [{key: k, operator: Equal, value: v, effect: NoSchedule}], volumes: [{name: scratch, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], volumeMode: Filesystem, resources: {requests: {storage: 1Gi}}}}}}]",
		"imagePullPolicy: IfNotPresent, terminationMessagePolicy: FallbackToLogsOnError, ports: [{containerPort: 53, protocol: UDP}], livenessProbe: {httpGet: {path: /, port: 80, scheme: HTTPS}}"),
	pod("pull-policy", "", "imagePullPolicy: always"),
	deployment("restartPolicy: never"),
	`{apiVersion: batch/v1, kind: Job, metadata: {name: restarts-lower-case}, spec: {template: {spec: {restartPolicy: never, containers: [{name: job, image: busybox}]}}}}`,
	pod("container-protocol", "", "ports: [{containerPort: 80, protocol: tcp}]"),
	pod("termination-message", "", "terminationMessagePolicy: file"),
	pod("probe-scheme", "", "livenessProbe: {httpGet: {path: /, port: 80, scheme: https}}"),
	pod("dns-policy", "dnsPolicy: clusterFirst", ""),
	pod("toleration-effect", "tolerations: [{key: k, operator: Exists, effect: noSchedule}]", ""),
	pod("claim-modes", "volumes: [{name: scratch, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce, readWriteOnce], volumeMode: block, resources: {requests: {storage: 1Gi}}}}}}]", ""),
	`{apiVersion: apps/v1, kind: Deployment, metadata: {name: template-pull-policy}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {initContainers: [{name: init, image: busybox, imagePullPolicy: never}], containers: [{name: web, image: nginx, imagePullPolicy: ifNotPresent}]}}}}`,
	`{apiVersion: apps/v1, kind: Deployment, metadata: {name: ok-strategy}, spec: {strategy: {type: Recreate}, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}}`,
	`{apiVersion: apps/v1, kind: Deployment, metadata: {name: strategy}, spec: {strategy: {type: rollingUpdate}, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}}`,
	`{apiVersion: apps/v1, kind: Deployment, metadata: {name: strategy-rolling}, spec: {strategy: {type: rollingupdate, rollingUpdate: {maxSurge: 25%}}, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}}`,
	`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: update-strategy}, spec: {updateStrategy: {type: onDelete}, selector: {matchLabels: {app: agent}}, template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: agent, image: agent}]}}}}`,
	`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ok-update-strategy}, spec: {updateStrategy: {type: OnDelete}, selector: {matchLabels: {app: agent}}, template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: agent, image: agent}]}}}}`,
	`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: claim-template-modes}, spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: postgres}]}}, volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [readWriteOnce], volumeMode: Block, resources: {requests: {storage: 1Gi}}}}]}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: ok-indexed}, spec: {completionMode: Indexed, completions: 2, template: {spec: {restartPolicy: Never, containers: [{name: job, image: busybox}]}}}}`,
	`{apiVersion: batch/v1, kind: Job, metadata: {name: completion-mode}, spec: {completionMode: indexed, template: {spec: {restartPolicy: Never, containers: [{name: job, image: busybox}]}}}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: ok-enums}, spec: {type: NodePort, sessionAffinity: ClientIP, externalTrafficPolicy: Local, internalTrafficPolicy: Local, ports: [{port: 53, protocol: UDP}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: session-affinity}, spec: {sessionAffinity: clientIP, ports: [{port: 80}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: internal-traffic}, spec: {internalTrafficPolicy: local, ports: [{port: 80}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: internal-traffic-empty}, spec: {internalTrafficPolicy: '', ports: [{port: 80}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: external-traffic}, spec: {type: LoadBalancer, externalTrafficPolicy: local, ports: [{port: 80}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: external-traffic-internal}, spec: {externalTrafficPolicy: Local, ports: [{port: 80}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: external-traffic-internal-bad}, spec: {externalTrafficPolicy: local, ports: [{port: 80}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: service-protocol}, spec: {ports: [{port: 80, protocol: tcp}]}}`,
	`{apiVersion: v1, kind: Service, metadata: {name: bad-type-and-affinity}, spec: {type: Nodeport, sessionAffinity: none, ports: [{port: 80}]}}`,
	`{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: ok-protocol}, spec: {podSelector: {}, ingress: [{ports: [{protocol: SCTP, port: 80}]}]}}`,
	`{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: protocol}, spec: {podSelector: {}, ingress: [{ports: [{protocol: tcp, port: 80}]}], egress: [{ports: [{protocol: udp}]}]}}`,
	`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: ok-eviction}, spec: {minAvailable: 1, unhealthyPodEvictionPolicy: AlwaysAllow, selector: {matchLabels: {app: web}}}}`,
	`{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: eviction}, spec: {minAvailable: 1, unhealthyPodEvictionPolicy: alwaysAllow, selector: {matchLabels: {app: web}}}}`,
}

// pod returns a Pod named name with one container, and the fields spec
// and container (flow YAML, without braces) added to its spec and its
// container.
func pod(name, spec, container string) string {
	if spec != "" {
		spec = ", " + spec
	}
	if container != "" {
		container = ", " + container
	}
	return fmt.Sprintf(`{apiVersion: v1, kind: Pod, metadata: {name: %s}, spec: {containers: [{name: app, image: busybox%s}]%s}}`, name, container, spec)
}

// deployment returns a valid Deployment, or one with the mistake change
// names ("key: value").
func deployment(change string) string {
	key, value, _ := strings.Cut(change, ": ")
	name := "ok"
	if key != "" {
		name = strings.ToLower(key)
	}
	selector, restart, containers := "{matchLabels: {app: web}}", "Always", ""
	container := map[string]string{"name": "web", "image": "nginx", "portName": "http", "containerPort": "80", "mountName": "data", "cpuRequest": "100m"}
	volume := "data"
	var extra []string
	switch key {
	case "selector":
		selector = value
	case "restartPolicy":
		restart = value
	case "containers":
		containers = value
	case "containerName":
		container["name"] = value
	case "volumeName":
		volume = value
		container["mountName"] = value
	case "secondContainer":
		extra = append(extra, fmt.Sprintf("{name: %s, image: busybox}", value))
	case "secondVolume":
		volume += "}, {name: " + value + ", emptyDir: {}"
	default:
		if key != "" {
			container[key] = value
		}
	}
	if containers == "" {
		c := fmt.Sprintf("{name: %s, image: %s, ports: [{name: %s, containerPort: %s}], volumeMounts: [{name: %s, mountPath: /data}], resources: {requests: {cpu: %s}, limits: {cpu: '1'}}}",
			container["name"], container["image"], container["portName"], container["containerPort"], container["mountName"], container["cpuRequest"])
		containers = "[" + strings.Join(append([]string{c}, extra...), ", ") + "]"
	}
	return fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: %s}, spec: {selector: %s, template: {metadata: {labels: {app: web}}, spec: {restartPolicy: %s, containers: %s, volumes: [{name: %s, emptyDir: {}}]}}}}`,
		name, selector, restart, containers, volume)
}

func ingress(name, host, path string) string {
	return fmt.Sprintf(`{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: %s}, spec: {rules: [{%s, http: {paths: [%s]}}]}}`, name, host, path)
}

// TestSpecValidationAsTheAPIServer holds builtin.Validate, which inrun
// simulate applies to every object of a built-in kind it stores, to a
// real API server: each object is created with a server-side dry run, and
// what the API server refuses must be what Validate refuses, field by
// field, with the same messages. Valid objects must pass both.
func TestSpecValidationAsTheAPIServer(t *testing.T) {
	cluster := clustertest.Shared(t)
	c, err := client.New(cluster.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, cluster)
	for _, src := range specCases {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(src), &u.Object); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		u.SetNamespace(ns)
		t.Run(u.GetKind()+"/"+u.GetName(), func(t *testing.T) {
			want := causes(c.Create(context.Background(), u.DeepCopy(), client.DryRunAll))
			var got []metav1.StatusCause
			if errs := builtin.Validate(u); len(errs) > 0 {
				got = causes(apierrors.NewInvalid(u.GroupVersionKind().GroupKind(), u.GetName(), errs))
			}
			if strings.HasPrefix(u.GetName(), "ok") != (len(want) == 0) {
				t.Errorf("the API server refused %v: the case's name is wrong", want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Validate differs from the API server (-API server +Validate):\n%s", diff)
			}
		})
	}
}

// causes returns the field errors of an Invalid error, sorted.
func causes(err error) []metav1.StatusCause {
	if err == nil {
		return nil
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return []metav1.StatusCause{{Message: err.Error()}}
	}
	out := status.Status().Details.Causes
	sort.Slice(out, func(i, j int) bool { return out[i].Field+out[i].Message < out[j].Field+out[j].Message })
	return out
}
