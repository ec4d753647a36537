// Package kubernetes holds seatd's Kubernetes manifests; this test checks
// them against the Kubernetes API types (strict decoding: an unknown or
// misspelt field fails) and checks the shutdown timing they promise.
package kubernetes

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// kinds maps apiVersion/kind to a fresh typed object.
var kinds = map[string]func() any{
	"apps/v1/Deployment":            func() any { return &appsv1.Deployment{} },
	"v1/Service":                    func() any { return &corev1.Service{} },
	"v1/Secret":                     func() any { return &corev1.Secret{} },
	"policy/v1/PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
	"batch/v1/Job":                  func() any { return &batchv1.Job{} },
}

func load(t *testing.T) map[string][]any {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string][]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			var tm typeMeta
			require.NoError(t, yaml.Unmarshal(doc, &tm), "%s doc %d", f, i)
			key := tm.APIVersion + "/" + tm.Kind
			newObj, ok := kinds[key]
			require.True(t, ok, "%s doc %d: unexpected kind %s", f, i, key)
			obj := newObj()
			require.NoError(t, yaml.UnmarshalStrict(doc, obj), "%s doc %d (%s) does not match the Kubernetes API", f, i, key)
			out[tm.Kind] = append(out[tm.Kind], obj)
		}
	}
	return out
}

func TestManifestsMatchTheKubernetesAPI(t *testing.T) {
	objs := load(t)
	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget", "Job"} {
		require.Len(t, objs[kind], 1, "one %s", kind)
	}
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func TestDeploymentDrainsWithinTheGracePeriod(t *testing.T) {
	d := load(t)["Deployment"][0].(*appsv1.Deployment)
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]

	// TLS on both ports: the kubelet's gRPC probes cannot speak it.
	require.Contains(t, c.Args, "--tls-cert-file=/etc/seatd/tls/tls.crt", "serves TLS")
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, "readiness follows the drain")
	require.Equal(t, corev1.URISchemeHTTPS, c.ReadinessProbe.HTTPGet.Scheme)
	require.Equal(t, corev1.URISchemeHTTPS, c.LivenessProbe.HTTPGet.Scheme)
	require.NotNil(t, c.Lifecycle.PreStop.Sleep, "preStop sleeps so endpoints update before SIGTERM")

	drain, err := time.ParseDuration(env(c, "SEATD_DRAIN_DELAY"))
	require.NoError(t, err)
	timeout, err := time.ParseDuration(env(c, "SEATD_SHUTDOWN_TIMEOUT"))
	require.NoError(t, err)
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	require.Greater(t, grace, preStop+drain+timeout,
		"terminationGracePeriodSeconds must exceed preStop + drain delay + shutdown timeout, or the kubelet kills seatd mid-drain")

	require.Zero(t, d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue(), "rolling updates add before they remove")
	pdb := load(t)["PodDisruptionBudget"][0].(*policyv1.PodDisruptionBudget)
	require.Equal(t, d.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels, "the PDB covers the seatd pods")

	job := load(t)["Job"][0].(*batchv1.Job)
	require.Equal(t, "migrate up", strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "))
}

// TestManifestsRunTheBuiltImage: the pods run the image `make image` builds,
// as the user it declares.
func TestManifestsRunTheBuiltImage(t *testing.T) {
	out, err := exec.Command("make", "--no-print-directory", "-s", "-C", "../..", "image/name").Output()
	require.NoError(t, err, "make image/name")
	image := strings.TrimSpace(string(out))
	cf, err := os.ReadFile("../image/Containerfile")
	require.NoError(t, err)
	var uid int64 = -1
	for _, line := range strings.Split(string(cf), "\n") {
		if u, ok := strings.CutPrefix(line, "USER "); ok {
			uid, err = strconv.ParseInt(strings.Split(u, ":")[0], 10, 64)
			require.NoError(t, err, "the Containerfile's USER is numeric")
		}
	}
	require.Positive(t, uid, "the Containerfile names a non-root USER")

	objs := load(t)
	pods := map[string]corev1.PodSpec{
		"Deployment": objs["Deployment"][0].(*appsv1.Deployment).Spec.Template.Spec,
		"Job":        objs["Job"][0].(*batchv1.Job).Spec.Template.Spec,
	}
	for kind, pod := range pods {
		for _, c := range pod.Containers {
			require.Equal(t, image, c.Image, "%s %s runs the image make image builds", kind, c.Name)
			require.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy, "%s %s: a :latest image loaded into the nodes is not pulled", kind, c.Name)
			require.Equal(t, uid, *c.SecurityContext.RunAsUser, "%s %s runs as the image's user", kind, c.Name)
		}
	}
}
