package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"sigs.k8s.io/yaml"
)

// docs splits a multi-document YAML file.
func docs(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

func stripComments(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// decoded is every object of the folder, decoded strictly (an unknown or
// misspelt field fails) into its k8s.io/api type.
type decoded struct {
	jobs     map[string]*batchv1.Job
	cronJobs map[string]*batchv1.CronJob
	pvcs     map[string]*corev1.PersistentVolumeClaim
	classes  map[string]*nodev1.RuntimeClass
}

func decodeAll(t *testing.T, files map[string][]byte) decoded {
	t.Helper()
	d := decoded{jobs: map[string]*batchv1.Job{}, cronJobs: map[string]*batchv1.CronJob{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}, classes: map[string]*nodev1.RuntimeClass{}}
	for name, b := range files {
		for i, doc := range docs(t, b) {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s #%d: %v", name, i, err)
			}
			var obj any
			switch meta.APIVersion + " " + meta.Kind {
			case "batch/v1 Job":
				obj = &batchv1.Job{}
			case "batch/v1 CronJob":
				obj = &batchv1.CronJob{}
			case "v1 PersistentVolumeClaim":
				obj = &corev1.PersistentVolumeClaim{}
			case "node.k8s.io/v1 RuntimeClass":
				obj = &nodev1.RuntimeClass{}
			default:
				t.Fatalf("%s #%d: unexpected %s %s", name, i, meta.APIVersion, meta.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Fatalf("%s #%d: strict decoding: %v", name, i, err)
			}
			key := fmt.Sprintf("%s#%d", name, i)
			switch o := obj.(type) {
			case *batchv1.Job:
				d.jobs[key] = o
			case *batchv1.CronJob:
				d.cronJobs[key] = o
			case *corev1.PersistentVolumeClaim:
				d.pvcs[o.Name] = o
			case *nodev1.RuntimeClass:
				d.classes[o.Name] = o
			}
		}
	}
	return d
}

func readFiles(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob("*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = b
	}
	return files
}

func TestStrictDecodingRejectsTypos(t *testing.T) {
	bad := []byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  completionMod: Indexed\n")
	if err := yaml.UnmarshalStrict(bad, &batchv1.Job{}); err == nil {
		t.Fatal("a misspelt field was accepted: the manifests' test would prove nothing")
	}
}

func TestManifests(t *testing.T) {
	files := readFiles(t)
	d := decodeAll(t, files)
	if len(d.jobs) < 3 || len(d.cronJobs) != 1 || len(d.classes) != 1 {
		t.Fatalf("found %d jobs, %d cron jobs, %d runtime classes", len(d.jobs), len(d.cronJobs), len(d.classes))
	}
	var sweeps []*batchv1.JobSpec
	for name, j := range d.jobs {
		if !strings.Contains(name, "merge") {
			sweeps = append(sweeps, &j.Spec)
		}
	}
	for _, cj := range d.cronJobs {
		if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
			t.Error("the nightly CronJob may overlap the previous night's")
		}
		if f := strings.Fields(cj.Spec.Schedule); len(f) != 5 {
			t.Errorf("schedule %q", cj.Spec.Schedule)
		}
		sweeps = append(sweeps, &cj.Spec.JobTemplate.Spec)
	}
	if len(sweeps) != 3 {
		t.Fatalf("%d sweep jobs, want 3 (sidecar engine, node engine, nightly)", len(sweeps))
	}
	engines := map[string]bool{}
	for _, js := range sweeps {
		checkSweepJob(t, js, d)
		ps := js.Template.Spec
		for _, ic := range ps.InitContainers {
			if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				engines["sidecar"] = true
				if ic.SecurityContext == nil || ic.SecurityContext.Privileged == nil || !*ic.SecurityContext.Privileged {
					t.Error("the Docker-in-Docker sidecar must be privileged to run an engine")
				}
			}
		}
		for _, v := range ps.Volumes {
			if v.HostPath != nil && v.HostPath.Path == "/var/run/docker.sock" {
				engines["node"] = true
			}
		}
	}
	if !engines["sidecar"] || !engines["node"] {
		t.Errorf("engine choices offered: %v, want a sidecar and the node's", engines)
	}
	for name, j := range d.jobs {
		if strings.Contains(name, "merge") {
			args := strings.Join(j.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(args, "sandboxctl sweep merge") || !strings.Contains(args, "sandboxctl sweep export") {
				t.Errorf("%s does not merge and export: %s", name, args)
			}
		}
	}
}

// checkSweepJob checks what a sharded sweep relies on: completion index
// to shard, per-index retries, resume, the shard count equal to
// completions, the engine reachable, and claims that exist.
func checkSweepJob(t *testing.T, js *batchv1.JobSpec, d decoded) {
	t.Helper()
	if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion {
		t.Error("not an Indexed Job: the completion index is the shard")
	}
	if js.BackoffLimitPerIndex == nil || *js.BackoffLimitPerIndex < 1 || js.MaxFailedIndexes == nil {
		t.Error("no per-index retries (backoffLimitPerIndex, maxFailedIndexes)")
	}
	if js.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("backoffLimitPerIndex needs restartPolicy Never")
	}
	var c *corev1.Container
	for i := range js.Template.Spec.Containers {
		if js.Template.Spec.Containers[i].Name == "sweep" {
			c = &js.Template.Spec.Containers[i]
		}
	}
	if c == nil {
		t.Fatal("no sweep container")
	}
	script := strings.Join(c.Args, " ")
	for _, want := range []string{"sandboxctl sweep --resume", `--shard "$SHARD_INDEX/$SHARDS"`, "--out"} {
		if !strings.Contains(script, want) {
			t.Errorf("the sweep command lacks %q: %s", want, script)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e, ok := env["SHARD_INDEX"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Error("SHARD_INDEX does not come from the completion index")
	}
	if js.Completions == nil || env["SHARDS"].Value != fmt.Sprint(*js.Completions) {
		t.Errorf("SHARDS %q differs from completions", env["SHARDS"].Value)
	}
	if js.Parallelism == nil || *js.Parallelism > *js.Completions {
		t.Error("parallelism above completions")
	}
	sidecar := slices.ContainsFunc(js.Template.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "dind" })
	if sidecar && env["DOCKER_HOST"].Value != "tcp://127.0.0.1:2375" {
		t.Error("the sweep does not talk to its sidecar engine (DOCKER_HOST), or that engine is reachable beyond the pod")
	}
	for _, v := range js.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			if _, ok := d.pvcs[v.PersistentVolumeClaim.ClaimName]; !ok {
				t.Errorf("claim %s is not defined", v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
}

// TestRuntimeClassOption uncomments the optional runtimeClassName line of
// every sweep job and checks the result decodes and names the defined
// RuntimeClass.
func TestRuntimeClassOption(t *testing.T) {
	files := readFiles(t)
	d := decodeAll(t, files)
	n := 0
	for name, b := range files {
		if !bytes.Contains(b, []byte("# runtimeClassName: gvisor")) {
			continue
		}
		n++
		on := bytes.Replace(b, []byte("# runtimeClassName: gvisor"), []byte("runtimeClassName: gvisor"), 1)
		got := decodeAll(t, map[string][]byte{name: on})
		for _, j := range got.jobs {
			if rc := j.Spec.Template.Spec.RuntimeClassName; rc == nil || d.classes[*rc] == nil {
				t.Errorf("%s: runtimeClassName %v names no RuntimeClass", name, rc)
			}
		}
		for _, cj := range got.cronJobs {
			if rc := cj.Spec.JobTemplate.Spec.Template.Spec.RuntimeClassName; rc == nil || d.classes[*rc] == nil {
				t.Errorf("%s: runtimeClassName %v names no RuntimeClass", name, rc)
			}
		}
	}
	if n < 2 {
		t.Errorf("the runtimeClassName option is offered in %d files", n)
	}
}
