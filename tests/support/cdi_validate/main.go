// cdi-validate: load CDI spec files with the CDI library's own strict parser and validation
// (the code container runtimes use), then apply every device's edits to an empty OCI spec.
//
// Usage: cdi-validate SCHEMA.json SPEC... ; prints one JSON line per spec, exits 1 on the
// first invalid one. Built offline in GOPATH mode against Debian's
// golang-github-container-orchestrated-devices-container-device-interface-dev.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"
	"github.com/container-orchestrated-devices/container-device-interface/pkg/cdi/validate"
	"github.com/container-orchestrated-devices/container-device-interface/schema"
	oci "github.com/opencontainers/runtime-spec/specs-go"
)

type report struct {
	Path    string   `json:"path"`
	Kind    string   `json:"kind"`
	Version string   `json:"cdiVersion"`
	Devices []string `json:"devices"`
	Nodes   []int    `json:"deviceNodes"`
	Mounts  int      `json:"mounts"`
	Hooks   int      `json:"hooks"`
	Env     []string `json:"env"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: cdi-validate SCHEMA.json SPEC...")
	}
	s, err := schema.Load(os.Args[1])
	if err != nil {
		fail("cannot load schema %s: %v", os.Args[1], err)
	}
	cdi.SetSpecValidator(validate.WithSchema(s))
	for _, path := range os.Args[2:] {
		spec, err := cdi.ReadSpec(path, 0)
		if err != nil {
			fail("%s: %v", path, err)
		}
		r := report{Path: path, Kind: spec.Kind, Version: spec.Version}
		for _, d := range spec.Devices {
			dev := spec.GetDevice(d.Name)
			if dev == nil {
				fail("%s: device %q not loaded", path, d.Name)
			}
			o := &oci.Spec{}
			if err := spec.ApplyEdits(o); err != nil {
				fail("%s: spec edits: %v", path, err)
			}
			if err := dev.ApplyEdits(o); err != nil {
				fail("%s: device %q edits: %v", path, d.Name, err)
			}
			r.Devices = append(r.Devices, dev.GetQualifiedName())
			nodes := 0
			if o.Linux != nil {
				nodes = len(o.Linux.Devices)
			}
			r.Nodes = append(r.Nodes, nodes)
			r.Mounts = len(o.Mounts)
			if o.Process != nil {
				r.Env = o.Process.Env
			}
			if o.Hooks != nil {
				r.Hooks = len(o.Hooks.CreateContainer)
			}
		}
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	}
}
