package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
)

// CheckpointFile is the name of the checkpoint of the prepared claims in
// Options.StateDir, upstream's.
const CheckpointFile = "dra_manager_state"

const (
	checkpointKind       = "DRACheckpoint"
	checkpointAPIVersion = "checkpoint.dra.kubelet.k8s.io/v1"
)

// ErrCorruptCheckpoint is wrapped when the checkpoint's checksum does not
// match its data.
var ErrCorruptCheckpoint = errors.New("checkpoint is corrupted")

// ClaimState is what the node knows of one ResourceClaim it prepared, as
// its checkpoint holds it (upstream's ClaimInfoState): the claim, the
// pods that use it, and what each of its drivers prepared.
type ClaimState struct {
	ClaimUID  types.UID
	ClaimName string
	Namespace string
	// PodUIDs are the pods that use the claim; JSON holds them as an
	// object whose keys are the UIDs, as upstream's set.
	PodUIDs uidSet
	// DriverState has an entry for every driver of the claim's
	// allocation, even one that prepared no device.
	DriverState map[string]DriverState
}

// DriverState is what one driver prepared for a claim.
type DriverState struct {
	Devices []Device
}

// Device is a device a driver prepared, as NodePrepareResources described
// it. RequestNames empty means every request of the claim.
type Device struct {
	PoolName     string
	DeviceName   string
	RequestNames []string
	CDIDeviceIDs []string
}

// uidSet is a set of pod UIDs, written as upstream's sets.Set[string]:
// {"uid": {}, ...}.
type uidSet map[string]struct{}

// checkpoint is the file: Data, the JSON of checkpointData, and its CRC32
// (IEEE), as upstream's DRA checkpoint.
type checkpoint struct {
	Data     string
	Checksum uint32
}

type checkpointData struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Entries    []ClaimState
}

// encodeCheckpoint is the checkpoint of the claims, in their order.
func encodeCheckpoint(claims []ClaimState) ([]byte, error) {
	data, err := json.Marshal(checkpointData{Kind: checkpointKind, APIVersion: checkpointAPIVersion, Entries: claims})
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkpoint{Data: string(data), Checksum: crc32.ChecksumIEEE(data)})
}

// decodeCheckpoint reads a checkpoint: an error for one that is not JSON,
// whose checksum does not match (ErrCorruptCheckpoint), or of another
// kind or version.
func decodeCheckpoint(b []byte) ([]ClaimState, error) {
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, err
	}
	if sum := crc32.ChecksumIEEE([]byte(cp.Data)); sum != cp.Checksum {
		return nil, fmt.Errorf("%w: checksum %d, data's %d", ErrCorruptCheckpoint, cp.Checksum, sum)
	}
	var data checkpointData
	if err := json.Unmarshal([]byte(cp.Data), &data); err != nil {
		return nil, err
	}
	if data.Kind != checkpointKind || data.APIVersion != checkpointAPIVersion {
		return nil, fmt.Errorf("checkpoint of kind %q, version %q: want %q, %q", data.Kind, data.APIVersion, checkpointKind, checkpointAPIVersion)
	}
	return data.Entries, nil
}

// ReadCheckpoint reads the checkpoint of the prepared claims in stateDir:
// none when there is no file.
func ReadCheckpoint(stateDir string) ([]ClaimState, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, CheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	claims, err := decodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(stateDir, CheckpointFile), err)
	}
	return claims, nil
}

// writeCheckpoint replaces the checkpoint in stateDir atomically (a
// temporary file renamed over it, mode 0600).
func writeCheckpoint(stateDir string, claims []ClaimState) error {
	b, err := encodeCheckpoint(claims)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(stateDir, CheckpointFile), b)
}
