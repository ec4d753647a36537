// Package helm tests seatd's Helm chart (seatd/) with Helm's own Go packages:
// the chart loads, passes Helm's lint rules, and renders in both modes with
// its values.schema.json enforced; every rendered object is decoded strictly
// against the Kubernetes (and Prometheus Operator) API types, so that an
// unknown or misspelt field fails here rather than at kubectl apply.
//
// It is a Go module of its own so that seatd's go.mod does not pull Helm and
// the Kubernetes client libraries.
package helm

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "seatd"

func TestMain(m *testing.M) {
	// Helm's chart loader logs a line for the chart's one link
	// (files/alerts.yaml) on every load; the tests load it often.
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// distributedValues are the least a distributed install needs.
func distributedValues() map[string]any {
	return map[string]any{
		"mode": "distributed",
		"distributed": map[string]any{
			"postgres": map[string]any{"secretName": "seatd-backends"},
			"redis":    map[string]any{"secretName": "seatd-backends"},
		},
		"operatorKey": map[string]any{"secretName": "seatd-operator"},
	}
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	require.NoError(t, err)
	return c
}

// kinds maps apiVersion/kind to a fresh typed object.
var kinds = map[string]func() any{
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
}

// rendered is a chart's output: the typed objects by kind, and the text of
// NOTES.txt.
type rendered struct {
	objs  map[string][]any
	notes string
}

func (r rendered) one(t *testing.T, kind string) any {
	t.Helper()
	require.Len(t, r.objs[kind], 1, "one %s", kind)
	return r.objs[kind][0]
}

// render renders the chart as `helm install` would (the schema enforced
// unless skipSchema), and decodes every object strictly.
func render(t *testing.T, values map[string]any, skipSchema bool) (rendered, error) {
	t.Helper()
	c := loadChart(t)
	opts := chartutil.ReleaseOptions{Name: "lic", Namespace: "licensing", Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValuesWithSchemaValidation(c, values, opts, chartutil.DefaultCapabilities, skipSchema)
	if err != nil {
		return rendered{}, err
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		return rendered{}, err
	}
	out := rendered{objs: map[string][]any{}}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		text := files[name]
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			out.notes = text
			continue
		case !strings.HasSuffix(name, ".yaml"):
			require.Empty(t, strings.TrimSpace(text), "%s renders nothing", name)
			continue
		}
		for i, doc := range splitDocs(text) {
			var tm struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &tm), "%s doc %d:\n%s", name, i, doc)
			key := tm.APIVersion + "/" + tm.Kind
			newObj, ok := kinds[key]
			require.True(t, ok, "%s doc %d: unexpected kind %q", name, i, key)
			obj := newObj()
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), "%s doc %d (%s) does not match the API:\n%s", name, i, key, doc)
			out.objs[tm.Kind] = append(out.objs[tm.Kind], obj)
		}
	}
	return out, nil
}

func mustRender(t *testing.T, values map[string]any) rendered {
	t.Helper()
	r, err := render(t, values, false)
	require.NoError(t, err)
	return r
}

// splitDocs splits a rendered file into its YAML documents, leaving out
// those with nothing but comments.
func splitDocs(text string) []string {
	var docs []string
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(text, -1) {
		for _, line := range strings.Split(doc, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				docs = append(docs, doc)
				break
			}
		}
	}
	return docs
}

func TestChartPassesHelmLint(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"embedded":    {},
		"distributed": distributedValues(),
		"monitoring":  {"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}, "tls": map[string]any{"secretName": "seatd-tls"}},
	} {
		t.Run(name, func(t *testing.T) {
			linter := lint.AllWithKubeVersion(chartDir, values, "licensing", nil)
			for _, m := range linter.Messages {
				// INFO is advice (an icon); a warning or an error fails.
				require.Less(t, m.Severity, support.WarningSev, "helm lint: %s", m)
			}
		})
	}
	// The linter sees the schema too: distributed mode without its Secrets.
	linter := lint.AllWithKubeVersion(chartDir, map[string]any{"mode": "distributed"}, "licensing", nil)
	require.Equal(t, support.ErrorSev, linter.HighestSeverity)
	var text []string
	for _, m := range linter.Messages {
		text = append(text, m.Error())
	}
	require.Contains(t, strings.Join(text, "\n"), "/distributed/postgres/secretName")
}

// container returns the pod template's seatd container and the pod spec.
func container(t *testing.T, tmpl corev1.PodTemplateSpec) (corev1.Container, corev1.PodSpec) {
	t.Helper()
	require.Len(t, tmpl.Spec.Containers, 1)
	return tmpl.Spec.Containers[0], tmpl.Spec
}

func TestEmbeddedIsOneStatefulSetPodWithAVolume(t *testing.T) {
	r := mustRender(t, map[string]any{"embedded": map[string]any{"persistence": map[string]any{"size": "5Gi", "storageClass": "fast"}}})
	for _, kind := range []string{"Deployment", "PodDisruptionBudget", "Job"} {
		require.Empty(t, r.objs[kind], "no %s in embedded mode", kind)
	}
	sts := r.one(t, "StatefulSet").(*appsv1.StatefulSet)
	require.NotNil(t, sts.Spec.Replicas)
	require.EqualValues(t, 1, *sts.Spec.Replicas, "the data file admits one process")

	require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
	pvc := sts.Spec.VolumeClaimTemplates[0]
	require.Equal(t, "data", pvc.Name)
	require.Equal(t, "5Gi", pvc.Spec.Resources.Requests.Storage().String())
	require.Equal(t, "fast", *pvc.Spec.StorageClassName)

	c, _ := container(t, sts.Spec.Template)
	require.Contains(t, c.Args, "--data-dir=/data")
	require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	for _, e := range c.Env {
		require.NotContains(t, []string{"SEATD_POSTGRES_URL", "SEATD_REDIS_URL"}, e.Name, "embedded mode has no backends")
	}

	// The governing Service of the StatefulSet exists, and the client-facing one.
	var names []string
	for _, o := range r.objs["Service"] {
		names = append(names, o.(*corev1.Service).Name)
	}
	require.ElementsMatch(t, []string{"lic-seatd", sts.Spec.ServiceName}, names)

	// The operator key: generated into a Secret the chart keeps, and one
	// seatd accepts (at least 16 characters, 8 different ones).
	secret := r.one(t, "Secret").(*corev1.Secret)
	require.Equal(t, "lic-seatd-operator-key", secret.Name)
	require.Equal(t, "keep", secret.Annotations["helm.sh/resource-policy"], "an uninstall keeps the key the volume's data needs")
	key := string(secret.Data["operator-key"])
	require.GreaterOrEqual(t, len(key), 16)
	distinct := map[rune]bool{}
	for _, ch := range key {
		distinct[ch] = true
	}
	require.GreaterOrEqual(t, len(distinct), 8)
	require.Contains(t, c.Env, corev1.EnvVar{Name: "SEATD_OPERATOR_KEY", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "lic-seatd-operator-key"}, Key: "operator-key"}}})
	require.Contains(t, r.notes, "get secret lic-seatd-operator-key", "NOTES says where the operator key is")

	// A Secret named: no generated one.
	r = mustRender(t, map[string]any{"operatorKey": map[string]any{"secretName": "mine", "secretKey": "k"}})
	require.Empty(t, r.objs["Secret"])
	c, _ = container(t, r.one(t, "StatefulSet").(*appsv1.StatefulSet).Spec.Template)
	require.Contains(t, c.Env, corev1.EnvVar{Name: "SEATD_OPERATOR_KEY", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "mine"}, Key: "k"}}})
}

func TestDistributedIsADeploymentOverExistingSecrets(t *testing.T) {
	r := mustRender(t, distributedValues())
	require.Empty(t, r.objs["StatefulSet"])
	require.Empty(t, r.objs["Secret"], "distributed mode creates no Secret: it names existing ones")
	d := r.one(t, "Deployment").(*appsv1.Deployment)
	require.EqualValues(t, 3, *d.Spec.Replicas)
	require.Zero(t, d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue(), "rollouts add before they remove")

	pdb := r.one(t, "PodDisruptionBudget").(*policyv1.PodDisruptionBudget)
	require.Equal(t, d.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels, "the budget covers the seatd pods")
	require.Equal(t, 1, pdb.Spec.MaxUnavailable.IntValue())

	c, pod := container(t, d.Spec.Template)
	want := map[string]corev1.SecretKeySelector{
		"SEATD_POSTGRES_URL": {LocalObjectReference: corev1.LocalObjectReference{Name: "seatd-backends"}, Key: "postgres-url"},
		"SEATD_REDIS_URL":    {LocalObjectReference: corev1.LocalObjectReference{Name: "seatd-backends"}, Key: "redis-url"},
		"SEATD_OPERATOR_KEY": {LocalObjectReference: corev1.LocalObjectReference{Name: "seatd-operator"}, Key: "operator-key"},
	}
	got := map[string]corev1.SecretKeySelector{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			got[e.Name] = *e.ValueFrom.SecretKeyRef
		} else if e.ValueFrom == nil {
			t.Errorf("env %s is an inline value: secrets come from Secrets only", e.Name)
		}
	}
	require.Equal(t, want, got)
	require.Contains(t, c.Args, "--auto-migrate=false", "the migrate Job migrates")
	require.NotContains(t, strings.Join(c.Args, " "), "--data-dir", "no data dir in distributed mode")
	for _, v := range pod.Volumes {
		require.Nil(t, v.PersistentVolumeClaim, "no volume in distributed mode")
	}

	job := r.one(t, "Job").(*batchv1.Job)
	require.Equal(t, "pre-install,pre-upgrade", job.Annotations["helm.sh/hook"])
	require.Contains(t, job.Annotations["helm.sh/hook-delete-policy"], "before-hook-creation")
	jc, jpod := container(t, job.Spec.Template)
	require.Equal(t, []string{"migrate", "up"}, jc.Args)
	require.Equal(t, c.Image, jc.Image, "the Job migrates with the version it installs")
	require.Len(t, jc.Env, 1)
	require.Equal(t, want["SEATD_POSTGRES_URL"], *jc.Env[0].ValueFrom.SecretKeyRef)
	requireHardened(t, jpod, jc)
	svc := r.one(t, "Service").(*corev1.Service)
	require.False(t, selects(svc.Spec.Selector, job.Spec.Template.Labels), "the Service does not send clients to the migrate Job's pod")
	require.False(t, selects(pdb.Spec.Selector.MatchLabels, job.Spec.Template.Labels), "the budget does not count the migrate Job's pod")
	require.True(t, selects(svc.Spec.Selector, d.Spec.Template.Labels), "the Service selects the seatd pods")

	// Without the Job, each pod migrates at start.
	v := distributedValues()
	v["distributed"].(map[string]any)["migrateJob"] = map[string]any{"enabled": false}
	r = mustRender(t, v)
	require.Empty(t, r.objs["Job"])
	c, _ = container(t, r.one(t, "Deployment").(*appsv1.Deployment).Spec.Template)
	require.NotContains(t, c.Args, "--auto-migrate=false")
}

// selects says whether a selector's labels all hold in labels.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func requireHardened(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.NotZero(t, *pod.SecurityContext.RunAsUser)
	require.False(t, *pod.AutomountServiceAccountToken)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	require.NotEmpty(t, c.Resources.Requests, "resources requested")
	require.NotEmpty(t, c.Resources.Limits, "resources limited")
}

func arg(t *testing.T, c corev1.Container, flag string) string {
	t.Helper()
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s in %v", flag, c.Args)
	return ""
}

// Both modes: probes on /readyz and /healthz, non-root with a read-only root
// file system, and a grace period that outlasts the drain.
func TestPodsProbeReadyzAndDrainWithinTheGracePeriod(t *testing.T) {
	for mode, values := range map[string]map[string]any{"embedded": {}, "distributed": distributedValues()} {
		t.Run(mode, func(t *testing.T) {
			r := mustRender(t, values)
			var tmpl corev1.PodTemplateSpec
			if mode == "embedded" {
				tmpl = r.one(t, "StatefulSet").(*appsv1.StatefulSet).Spec.Template
			} else {
				tmpl = r.one(t, "Deployment").(*appsv1.Deployment).Spec.Template
			}
			c, pod := container(t, tmpl)
			require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
			require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
			require.Equal(t, "/healthz", c.StartupProbe.HTTPGet.Path)
			for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
				require.Equal(t, "http", p.HTTPGet.Port.String())
				require.Equal(t, corev1.URISchemeHTTP, p.HTTPGet.Scheme)
			}
			require.ElementsMatch(t, []corev1.ContainerPort{{Name: "grpc", ContainerPort: 7070}, {Name: "http", ContainerPort: 8080}}, c.Ports)
			require.Equal(t, ":7070", arg(t, c, "--grpc-addr"))
			require.Equal(t, ":8080", arg(t, c, "--http-addr"))
			requireHardened(t, pod, c)

			drain, err := time.ParseDuration(arg(t, c, "--drain-delay"))
			require.NoError(t, err)
			timeout, err := time.ParseDuration(arg(t, c, "--shutdown-timeout"))
			require.NoError(t, err)
			preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
			grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
			require.Greater(t, grace, preStop+drain+timeout,
				"terminationGracePeriodSeconds must exceed preStop + drain delay + shutdown timeout, or the kubelet kills seatd mid-drain")

			svc := r.objs["Service"][0].(*corev1.Service)
			require.Equal(t, tmpl.Labels["app.kubernetes.io/instance"], svc.Spec.Selector["app.kubernetes.io/instance"])
		})
	}
}

func TestTLSServesAndProbesHTTPS(t *testing.T) {
	v := distributedValues()
	v["tls"] = map[string]any{"secretName": "seatd-tls"}
	v["serviceMonitor"] = map[string]any{"enabled": true, "tlsConfig": map[string]any{"insecureSkipVerify": true}}
	r := mustRender(t, v)
	c, pod := container(t, r.one(t, "Deployment").(*appsv1.Deployment).Spec.Template)
	require.Equal(t, "/etc/seatd/tls/tls.crt", arg(t, c, "--tls-cert-file"))
	require.Equal(t, "/etc/seatd/tls/tls.key", arg(t, c, "--tls-key-file"))
	require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/etc/seatd/tls", ReadOnly: true})
	require.Contains(t, pod.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "seatd-tls"}}})
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		require.Equal(t, corev1.URISchemeHTTPS, p.HTTPGet.Scheme, "the kubelet's HTTPS probes speak TLS; its gRPC probes cannot")
	}
	sm := r.one(t, "ServiceMonitor").(*monitoringv1.ServiceMonitor)
	require.Equal(t, "https", strings.ToLower(string(*sm.Spec.Endpoints[0].Scheme)))
	require.True(t, *sm.Spec.Endpoints[0].TLSConfig.InsecureSkipVerify)
}

// The PrometheusRule is deploy/prometheus/alerts.yaml itself, so that the
// rules promtool tests are the rules installed.
func TestPrometheusRuleIsTheRepositoryAlerts(t *testing.T) {
	link, err := os.Readlink(filepath.Join(chartDir, "files", "alerts.yaml"))
	require.NoError(t, err, "files/alerts.yaml must stay a link to deploy/prometheus/alerts.yaml, not a copy that drifts")
	require.Equal(t, filepath.Join("..", "..", "..", "prometheus", "alerts.yaml"), link)

	r := mustRender(t, map[string]any{
		"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus"}},
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus"}},
	})
	rule := r.one(t, "PrometheusRule").(*monitoringv1.PrometheusRule)
	require.Equal(t, "kube-prometheus", rule.Labels["release"])

	src, err := os.ReadFile(filepath.Join("..", "prometheus", "alerts.yaml"))
	require.NoError(t, err)
	var want monitoringv1.PrometheusRuleSpec
	require.NoError(t, yaml.UnmarshalStrict(src, &want))
	require.NotEmpty(t, want.Groups)
	require.Equal(t, want, rule.Spec)
	// Helm did not read the rules' own {{ $value }} templates.
	require.Contains(t, string(mustJSON(t, rule.Spec)), "{{ $value")

	sm := r.one(t, "ServiceMonitor").(*monitoringv1.ServiceMonitor)
	require.Equal(t, "kube-prometheus", sm.Labels["release"])
	require.Equal(t, "http", sm.Spec.Endpoints[0].Port)
	require.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	require.Equal(t, []string{"licensing"}, sm.Spec.NamespaceSelector.MatchNames)
	var scraped []string
	for _, o := range r.objs["Service"] {
		if svc := o.(*corev1.Service); selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
			scraped = append(scraped, svc.Name)
		}
	}
	require.Equal(t, []string{"lic-seatd"}, scraped, "the ServiceMonitor scrapes through one Service (not the headless one too: each pod twice)")

	// Off by default: a cluster without the Prometheus Operator has no such kinds.
	r = mustRender(t, nil)
	require.Empty(t, r.objs["ServiceMonitor"])
	require.Empty(t, r.objs["PrometheusRule"])
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	require.NoError(t, err)
	return b
}

// daemonFlags reads seatd's flag names from its source, so that the chart
// cannot pass a flag seatd no longer has (seatd would not start).
func daemonFlags(t *testing.T) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "server", "daemon", "config.go"))
	require.NoError(t, err)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`fs\.\w+Var\(&c\.\w+, "([a-z0-9-]+)"`).FindAllSubmatch(src, -1) {
		flags[string(m[1])] = true
	}
	require.Greater(t, len(flags), 20, "seatd's flags read from server/daemon/config.go")
	return flags
}

func TestConfigBecomesSeatdFlags(t *testing.T) {
	flags := daemonFlags(t)
	v := distributedValues()
	v["tls"] = map[string]any{"secretName": "seatd-tls"}
	v["signingKeyEncryptionKey"] = map[string]any{"secretName": "seatd-sealing"}
	v["config"] = map[string]any{"cleanup-batch": 1000000, "failed-lookup-rate": 0.5, "leader-failing-unready": true, "log-level": "debug"}
	r := mustRender(t, v)
	c, _ := container(t, r.one(t, "Deployment").(*appsv1.Deployment).Spec.Template)
	for _, want := range []string{"--cleanup-batch=1000000", "--failed-lookup-rate=0.5", "--leader-failing-unready=true", "--log-level=debug"} {
		require.Contains(t, c.Args, want, "a whole number stays whole (not 1e+06)")
	}
	for _, a := range c.Args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		require.True(t, flags[name], "the chart passes %s, which seatd does not have", a)
	}
	for _, e := range c.Env {
		name := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(e.Name, "SEATD_")), "_", "-")
		require.True(t, flags[name], "the chart sets %s, which is no seatd flag's variable", e.Name)
	}
	require.Contains(t, c.Env, corev1.EnvVar{Name: "SEATD_SIGNING_KEY_ENCRYPTION_KEY", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "seatd-sealing"}, Key: "signing-key-encryption-key"}}})

	// The flags config may not set (the chart's own) are seatd's flags too.
	var schema struct {
		Properties struct {
			Config struct {
				Properties map[string]bool `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &schema))
	refused := schema.Properties.Config.Properties
	require.NotEmpty(t, refused)
	for name, allowed := range refused {
		require.False(t, allowed, "config.%s is listed to be refused", name)
		require.True(t, flags[name], "values.schema.json refuses config %q, which is no seatd flag", name)
	}
}

// Bad values fail `helm install` with the schema's message naming the field,
// before anything is rendered.
func TestSchemaRejectsBadValuesNamingTheField(t *testing.T) {
	dist := func(edit func(v map[string]any)) map[string]any {
		v := distributedValues()
		edit(v)
		return v
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		field  string
	}{
		{"unknown mode", map[string]any{"mode": "cluster"}, "/mode"},
		{"misspelt top-level key", map[string]any{"replica": 3}, "'replica'"},
		{"replicas in embedded mode", map[string]any{"embedded": map[string]any{"replicas": 2}}, "'replicas'"},
		{"one distributed replica", dist(func(v map[string]any) { v["distributed"].(map[string]any)["replicas"] = 1 }), "/distributed/replicas"},
		{"distributed without a PostgreSQL Secret", dist(func(v map[string]any) {
			v["distributed"].(map[string]any)["postgres"] = map[string]any{"secretName": ""}
		}), "/distributed/postgres/secretName"},
		{"distributed without an operator key", dist(func(v map[string]any) { delete(v, "operatorKey") }), "/operatorKey/secretName"},
		{"an inline PostgreSQL URL", dist(func(v map[string]any) {
			v["distributed"].(map[string]any)["postgres"] = map[string]any{"secretName": "x", "url": "postgres://seatd:pw@db/seatd"}
		}), "'url'"},
		{"a chart-managed flag in config", map[string]any{"config": map[string]any{"postgres-url": "postgres://db"}}, "/config/postgres-url"},
		{"a flag name that is no flag", map[string]any{"config": map[string]any{"--log-level": "debug"}}, "--log-level"},
		{"root", map[string]any{"podSecurityContext": map[string]any{"runAsUser": 0}}, "/podSecurityContext/runAsUser"},
		{"bad volume size", map[string]any{"embedded": map[string]any{"persistence": map[string]any{"size": "lots"}}}, "/embedded/persistence/size"},
		{"negative pre-stop", map[string]any{"shutdown": map[string]any{"preStopSeconds": -1}}, "/shutdown/preStopSeconds"},
		{"unknown probe field", map[string]any{"probes": map[string]any{"readiness": map[string]any{"path": "/"}}}, "'path'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.values, false)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.field, "the error names the field")
		})
	}
}

// Even with --skip-schema-validation, distributed mode without its Secrets
// fails to render, naming the value.
func TestDistributedNeedsItsSecretsWithoutTheSchema(t *testing.T) {
	for value, edit := range map[string]func(v map[string]any){
		"distributed.postgres.secretName": func(v map[string]any) {
			v["distributed"].(map[string]any)["postgres"] = map[string]any{"secretName": ""}
		},
		"distributed.redis.secretName": func(v map[string]any) { v["distributed"].(map[string]any)["redis"] = map[string]any{"secretName": ""} },
		"operatorKey.secretName":       func(v map[string]any) { delete(v, "operatorKey") },
	} {
		t.Run(value, func(t *testing.T) {
			v := distributedValues()
			edit(v)
			_, err := render(t, v, true)
			require.Error(t, err)
			require.Contains(t, err.Error(), value)
		})
	}
}

// The chart's image is the one `make image` builds; a tag overrides the
// chart's appVersion.
func TestImageIsMakeImages(t *testing.T) {
	c := loadChart(t)
	r := mustRender(t, nil)
	ctr, _ := container(t, r.one(t, "StatefulSet").(*appsv1.StatefulSet).Spec.Template)
	require.Equal(t, fmt.Sprintf("localhost/seatd:%s", c.Metadata.AppVersion), ctr.Image)

	r = mustRender(t, map[string]any{"image": map[string]any{"repository": "registry.example/seatd", "tag": "v1.2.3"}})
	ctr, _ = container(t, r.one(t, "StatefulSet").(*appsv1.StatefulSet).Spec.Template)
	require.Equal(t, "registry.example/seatd:v1.2.3", ctr.Image)
	require.True(t, bytes.Contains(mustJSON(t, r.one(t, "StatefulSet")), []byte(`app.kubernetes.io/version: v1.2.3`)))
}
