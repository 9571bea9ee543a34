package lab

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// A checkpoint image (runsc checkpoint --image-path DIR) keeps the
// kernel's state in DIR/checkpoint.img, in gVisor's statefile format
// (gvisor.dev/gvisor/pkg/state/statefile): an 8-byte magic, the length of
// the metadata (8 bytes, big endian), the metadata as a JSON map of
// strings, then the state data. With a key the metadata is followed by
// its HMAC-SHA256 and the data carries MACs too; runsc passes no key (the
// boot process reads the file with a nil key), so an image's metadata is
// whatever whoever wrote the file put there: the sandbox's Sentry, which
// gVisor assumes may be compromised. These functions read and rewrite it
// as such a Sentry could, for tests of what a restore takes from it.

// checkpointStateFile is the file of an image directory that holds the
// statefile (gVisor's checkpointfiles.StateFileName).
const checkpointStateFile = "checkpoint.img"

// statefileMagic begins every statefile ("gVisorSF").
var statefileMagic = []byte("gVisorSF")

// maxCheckpointMetadata bounds the metadata read, as statefile does.
const maxCheckpointMetadata = 16 << 20

// CheckpointMetadata returns the metadata of the checkpoint image in dir.
func CheckpointMetadata(dir string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(dir, checkpointStateFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCheckpointMetadata(f)
}

// SetCheckpointMetadata rewrites the checkpoint image in dir with md as
// its metadata and its state data unchanged. It writes no HMAC: the image
// must have none (runsc's do not).
func SetCheckpointMetadata(dir string, md map[string]string) error {
	path := filepath.Join(dir, checkpointStateFile)
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := readCheckpointMetadata(in); err != nil {
		return err
	}
	b, err := json.Marshal(md)
	if err != nil {
		return err
	}
	out, err := os.CreateTemp(dir, checkpointStateFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	var head [8]byte
	binary.BigEndian.PutUint64(head[:], uint64(len(b)))
	for _, part := range [][]byte{statefileMagic, head[:], b} {
		if _, err := out.Write(part); err != nil {
			out.Close()
			return err
		}
	}
	// in is at the state data, past the old metadata.
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), path)
}

// readCheckpointMetadata reads a statefile's magic and metadata from r,
// leaving r at its state data.
func readCheckpointMetadata(r io.Reader) (map[string]string, error) {
	var head [16]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, fmt.Errorf("reading the checkpoint's header: %w", err)
	}
	if !bytes.Equal(head[:8], statefileMagic) {
		return nil, fmt.Errorf("not a gVisor statefile: magic %q", head[:8])
	}
	n := binary.BigEndian.Uint64(head[8:])
	if n > maxCheckpointMetadata {
		return nil, fmt.Errorf("the checkpoint's metadata is %d bytes, more than a statefile's %d", n, maxCheckpointMetadata)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("reading the checkpoint's metadata: %w", err)
	}
	md := make(map[string]string)
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("the checkpoint's metadata: %w", err)
	}
	return md, nil
}
