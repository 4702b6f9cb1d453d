// Package handwritten is the baseline of the convergence benchmark: a
// controller-runtime operator for the Website kind of the canonical pack,
// written by hand the way its authors would write it, with no Inrun code.
//
// Each Website becomes a Deployment and a Service, applied with server-side
// apply under one field owner, and a status with readyReplicas, url,
// observedGeneration and a Ready condition. The controller watches Websites
// through a GenerationChangedPredicate and owns its Deployments and
// Services, so that their changes, such as a Deployment's ready replicas,
// come back as reconciles of their Website.
package handwritten
