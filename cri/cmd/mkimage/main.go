// Command mkimage writes a single-layer container image as a docker-archive
// tar (what docker save wrote before OCI layouts, and what
// ctr images import reads): the files given as SRC=DEST, mode 0755, owned
// by root, with a fixed time, so that the same inputs give the same bytes
// and the same image digest.
//
//	mkimage -o image.tar -tag netqdisc.test/cri:v1 -entrypoint /pause bin/pause=/pause bin/sender=/sender
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"
)

type tags []string

func (t *tags) String() string     { return strings.Join(*t, ",") }
func (t *tags) Set(v string) error { *t = append(*t, v); return nil }

// epoch is every file's time: fixed, for reproducible digests.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	out := flag.String("o", "", "the archive to write")
	var names tags
	flag.Var(&names, "tag", "an image name (repeatable)")
	entrypoint := flag.String("entrypoint", "", "the image's entrypoint")
	flag.Parse()
	if *out == "" || len(names) == 0 || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mkimage -o image.tar -tag NAME [-entrypoint /pause] SRC=DEST...")
		os.Exit(2)
	}
	if err := write(*out, names, *entrypoint, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func write(out string, names []string, entrypoint string, files []string) error {
	layer, err := layerTar(files)
	if err != nil {
		return err
	}
	layerSum := sha256.Sum256(layer)
	layerHex := hex.EncodeToString(layerSum[:])
	config := map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config": map[string]any{
			"Env":        []string{"PATH=/"},
			"Entrypoint": []string{entrypoint},
			"WorkingDir": "/",
		},
		"rootfs": map[string]any{
			"type":     "layers",
			"diff_ids": []string{"sha256:" + layerHex},
		},
		"history": []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "netqdisc cri/build.sh (mkimage)"}},
	}
	if entrypoint == "" {
		delete(config["config"].(map[string]any), "Entrypoint")
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return err
	}
	configSum := sha256.Sum256(configJSON)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := layerHex + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": names,
		"Layers":   []string{layerName},
	}})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := addDir(tw, layerHex+"/"); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{layerName, layer},
		{configName, configJSON},
		{"manifest.json", manifest},
	} {
		if err := addFile(tw, f.name, f.data, 0o644); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// layerTar is the layer: each SRC=DEST file at DEST, with its parent
// directories.
func layerTar(files []string) ([]byte, error) {
	type entry struct {
		dest string
		data []byte
	}
	var entries []entry
	dirs := map[string]bool{}
	for _, f := range files {
		src, dest, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dest) {
			return nil, fmt.Errorf("%q: want SRC=/DEST", f)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		dest = strings.TrimPrefix(path.Clean(dest), "/")
		entries = append(entries, entry{dest, data})
		for d := path.Dir(dest); d != "."; d = path.Dir(d) {
			dirs[d+"/"] = true
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].dest < entries[j].dest })
	var sorted []string
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range sorted {
		if err := addDir(tw, d); err != nil {
			return nil, err
		}
	}
	for _, e := range entries {
		if err := addFile(tw, e.dest, e.data, 0o755); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addDir(tw *tar.Writer, name string) error {
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: epoch})
}

func addFile(tw *tar.Writer, name string, data []byte, mode int64) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}
