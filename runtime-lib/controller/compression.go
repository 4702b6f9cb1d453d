package controller

import "k8s.io/client-go/rest"

// SetCompression says whether cfg asks the API server to gzip its
// responses. The runtime and generated operators ask it not to unless told
// (--api-compression), as kube-controller-manager and kube-scheduler do:
// next to the API server, gzip costs both ends CPU and saves no time, and
// the API server gzips whole watch streams for a client that accepts it
// (client-go's informers list by watching). In the benchmark's CPU profile
// the operator's decompression was 5% of its CPU. A kubeconfig's
// disable-compression: true keeps it off either way.
func SetCompression(cfg *rest.Config, on bool) {
	if !on {
		cfg.DisableCompression = true
	}
}
