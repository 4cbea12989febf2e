package deploy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []yaml.Node {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(read(t, path)))
	var docs []yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, doc)
	}
}

// decodeOne decodes a file of one YAML document into v.
func decodeOne(t *testing.T, path string, v any) {
	t.Helper()
	docs := yamlDocs(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", path, len(docs))
	}
	if err := docs[0].Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The parts of the manifests the invariants are about.
type (
	meta struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	envVar struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	container struct {
		Name  string   `yaml:"name"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []envVar `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		StartupProbe   *probe `yaml:"startupProbe"`
		LivenessProbe  *probe `yaml:"livenessProbe"`
		ReadinessProbe *probe `yaml:"readinessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	deployment struct {
		Kind     string `yaml:"kind"`
		Metadata meta   `yaml:"metadata"`
		Spec     struct {
			Replicas *int `yaml:"replicas"`
			Strategy struct {
				Type string `yaml:"type"`
			} `yaml:"strategy"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata meta `yaml:"metadata"`
				Spec     struct {
					EnableServiceLinks *bool `yaml:"enableServiceLinks"`
					SecurityContext    struct {
						RunAsNonRoot bool `yaml:"runAsNonRoot"`
						RunAsUser    int  `yaml:"runAsUser"`
					} `yaml:"securityContext"`
					Containers []container `yaml:"containers"`
					Volumes    []struct {
						Name     string    `yaml:"name"`
						EmptyDir *struct{} `yaml:"emptyDir"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	service struct {
		Kind     string `yaml:"kind"`
		Metadata meta   `yaml:"metadata"`
		Spec     struct {
			Selector                 map[string]string `yaml:"selector"`
			PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
			Ports                    []struct {
				Name       string `yaml:"name"`
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	serviceMonitor struct {
		Kind string `yaml:"kind"`
		Spec struct {
			JobLabel string `yaml:"jobLabel"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Endpoints []struct {
				Port string `yaml:"port"`
				Path string `yaml:"path"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
)

func (c container) env(name string) (envVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return envVar{}, false
}

func (c container) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func (c container) mount(volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

// matches reports whether every label of selector is in labels.
func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// TestDeploymentRunsOneAgent: one pipeline is applied by one agent at a
// time, never two, not even during a rollout.
func TestDeploymentRunsOneAgent(t *testing.T) {
	var d deployment
	decodeOne(t, "kubernetes/deployment.yaml", &d)
	if d.Kind != "Deployment" {
		t.Fatalf("kind %q", d.Kind)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("replicas %v, want 1", d.Spec.Replicas)
	}
	if d.Spec.Strategy.Type != "Recreate" {
		t.Errorf("strategy %q, want Recreate: a rolling update runs two agents at once", d.Spec.Strategy.Type)
	}
	if !matches(d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
		t.Errorf("selector %v does not select the pod's labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels)
	}
}

// TestDeploymentContainer checks the container against decant: its
// probes on the HTTP endpoint, DSNs from the Secret, the spill directory
// on a volume of a read-only, non-root container.
func TestDeploymentContainer(t *testing.T) {
	var d deployment
	decodeOne(t, "kubernetes/deployment.yaml", &d)
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Errorf("args %v, want run", c.Args)
	}
	addr, ok := c.env("DECANT_HTTP_ADDR")
	if !ok {
		t.Fatal("no DECANT_HTTP_ADDR: the probes and the scrape have nothing to reach")
	}
	_, port, err := net.SplitHostPort(addr.Value)
	if err != nil {
		t.Fatalf("DECANT_HTTP_ADDR %q: %v", addr.Value, err)
	}
	for name, p := range map[string]*probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil {
			t.Errorf("no %s probe", name)
			continue
		}
		if !endpoints[p.HTTPGet.Path] {
			t.Errorf("%s probe on %q, which decant does not serve", name, p.HTTPGet.Path)
		}
		if strconv.Itoa(c.port(p.HTTPGet.Port)) != port {
			t.Errorf("%s probe on port %q, not DECANT_HTTP_ADDR's %s", name, p.HTTPGet.Port, port)
		}
	}
	if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness on %s, want /healthz", c.LivenessProbe.HTTPGet.Path)
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness on %s, want /readyz", c.ReadinessProbe.HTTPGet.Path)
	}
	a := d.Spec.Template.Metadata.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != port || !endpoints[a["prometheus.io/path"]] {
		t.Errorf("scrape annotations %v do not point at DECANT_HTTP_ADDR's port %s", a, port)
	}
	for _, name := range []string{"DECANT_SOURCE", "DECANT_TARGET"} {
		e, ok := c.env(name)
		if !ok || e.Value != "" || e.ValueFrom.SecretKeyRef.Name == "" || e.ValueFrom.SecretKeyRef.Key == "" {
			t.Errorf("%s must come from a Secret (valueFrom.secretKeyRef), got %+v", name, e)
		}
	}
	spill, _ := c.env("DECANT_SPILL_DIR")
	var spillVolume string
	for _, v := range pod.Volumes {
		if v.EmptyDir != nil && c.mount(v.Name) == spill.Value {
			spillVolume = v.Name
		}
	}
	if spill.Value == "" || spillVolume == "" {
		t.Errorf("DECANT_SPILL_DIR %q is not an emptyDir volume's mount: the root file system is read-only", spill.Value)
	}
	sc := c.SecurityContext
	if !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser == 0 || !sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || strings.Join(sc.Capabilities.Drop, ",") != "ALL" {
		t.Errorf("security context: pod %+v, container %+v; want non-root, read-only root, no privilege escalation, capabilities dropped", pod.SecurityContext, sc)
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("enableServiceLinks must be false: a Service named decant-... would add DECANT_* variables")
	}
	if c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("resources %+v: want memory requests and limits", c.Resources)
	}
}

// TestMetricsScrape: the Service selects the pod and exposes its port,
// the ServiceMonitor scrapes it under job "decant", which the alerts
// select.
func TestMetricsScrape(t *testing.T) {
	var d deployment
	var s service
	var m serviceMonitor
	decodeOne(t, "kubernetes/deployment.yaml", &d)
	decodeOne(t, "kubernetes/service.yaml", &s)
	decodeOne(t, "kubernetes/servicemonitor.yaml", &m)
	if s.Kind != "Service" || m.Kind != "ServiceMonitor" {
		t.Fatalf("kinds %q, %q", s.Kind, m.Kind)
	}
	if !matches(s.Spec.Selector, d.Spec.Template.Metadata.Labels) {
		t.Errorf("the Service selects %v, not the pod %v", s.Spec.Selector, d.Spec.Template.Metadata.Labels)
	}
	if !s.Spec.PublishNotReadyAddresses {
		t.Error("the Service must publish a pod that is not ready: its metrics matter most then")
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(s.Spec.Ports) != 1 || c.port(s.Spec.Ports[0].TargetPort) == 0 {
		t.Fatalf("Service ports %+v do not reach a container port %+v", s.Spec.Ports, c.Ports)
	}
	if !matches(m.Spec.Selector.MatchLabels, s.Metadata.Labels) {
		t.Errorf("the ServiceMonitor selects %v, not the Service %v", m.Spec.Selector.MatchLabels, s.Metadata.Labels)
	}
	if len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != s.Spec.Ports[0].Name || m.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want port %q path /metrics", m.Spec.Endpoints, s.Spec.Ports[0].Name)
	}
	if job := s.Metadata.Labels[m.Spec.JobLabel]; job != "decant" {
		t.Errorf("the scrape job would be %q (jobLabel %q), but alerts.yml selects job=\"decant\"", job, m.Spec.JobLabel)
	}
}
