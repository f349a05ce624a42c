// Package state mirrors the checkpoint types of Katalyst v0.5.3's network QRM plugin (package
// state). Field order, Go types and JSON tags are what the checksum depends on.
package state

import (
	"katalystck/checksum"
	"katalystck/machine"
)

type AllocationInfo struct {
	PodUid         string         `json:"pod_uid,omitempty"`
	PodNamespace   string         `json:"pod_namespace,omitempty"`
	PodName        string         `json:"pod_name,omitempty"`
	ContainerName  string         `json:"container_name,omitempty"`
	ContainerType  string         `json:"container_type,omitempty"`
	ContainerIndex uint64         `json:"container_index,omitempty"`
	RampUp         bool           `json:"ramp_up,omitempty"`
	PodRole        string         `json:"pod_role,omitempty"`
	PodType        string         `json:"pod_type,omitempty"`
	Egress         uint32         `json:"egress"`
	Ingress        uint32         `json:"ingress"`
	IfName         string         `json:"if_name"`
	NumaNodes      machine.CPUSet `json:"numa_node"`

	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type (
	ContainerEntries map[string]*AllocationInfo
	PodEntries       map[string]ContainerEntries
)

type NICState struct {
	EgressState  BandwidthInfo `json:"egress_state"`
	IngressState BandwidthInfo `json:"ingress_state"`
	PodEntries   PodEntries    `json:"pod_entries"`
}

type BandwidthInfo struct {
	Capacity       uint32
	SysReservation uint32
	Reservation    uint32
	Allocatable    uint32
	Allocated      uint32
	Free           uint32
}

type NICMap map[string]*NICState

type NetworkPluginCheckpoint struct {
	PolicyName   string            `json:"policyName"`
	MachineState NICMap            `json:"machineState"`
	PodEntries   PodEntries        `json:"pod_entries"`
	Checksum     checksum.Checksum `json:"checksum"`
}

// New is what Katalyst decodes into: both maps start empty, not nil, so a member missing from
// the file leaves an empty map while an explicit null makes it nil.
func New() *NetworkPluginCheckpoint {
	return &NetworkPluginCheckpoint{MachineState: NICMap{}, PodEntries: PodEntries{}}
}
