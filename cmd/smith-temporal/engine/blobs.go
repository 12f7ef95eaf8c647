package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// BlobThreshold is the size above which a value travels by reference: a
// payload larger than this is written to the blob directory and only its
// hash enters Temporal's history (CONTRACT 14).
const BlobThreshold = 64 << 10

// blobEncoding marks a payload whose data is the hash of a blob.
const blobEncoding = "binary/smith-blob"

// Blobs is a content-addressed directory shared by the client and every
// worker (--blobs DIR): a blob's name is the SHA-256 of its content, so
// writing one again is harmless and reading one checks it.
type Blobs struct{ Dir string }

// Put stores data and returns its hash.
func (b Blobs) Put(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:])
	path := filepath.Join(b.Dir, ref[:2], ref)
	if _, err := os.Stat(path); err == nil {
		return ref, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("blobs: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ref+".tmp*")
	if err != nil {
		return "", fmt.Errorf("blobs: %w", err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("blobs: %w", werr)
	}
	return ref, nil
}

// Get returns the blob ref, checking its hash.
func (b Blobs) Get(ref string) ([]byte, error) {
	if len(ref) != 64 {
		return nil, fmt.Errorf("blobs: bad reference %q", ref)
	}
	data, err := os.ReadFile(filepath.Join(b.Dir, ref[:2], ref))
	if err != nil {
		return nil, fmt.Errorf("blobs: %w (is --blobs the same directory on every host?)", err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != ref {
		return nil, fmt.Errorf("blobs: %s is corrupt", ref)
	}
	return data, nil
}

// blobCodec moves payloads over BlobThreshold into the blob directory.
type blobCodec struct{ blobs Blobs }

func (c blobCodec) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if proto.Size(p) <= BlobThreshold {
			out[i] = p
			continue
		}
		data, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		ref, err := c.blobs.Put(data)
		if err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(ref)}
	}
	return out, nil
}

func (c blobCodec) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != blobEncoding {
			out[i] = p
			continue
		}
		data, err := c.blobs.Get(string(p.GetData()))
		if err != nil {
			return nil, err
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(data, &orig); err != nil {
			return nil, err
		}
		out[i] = &orig
	}
	return out, nil
}

// DataConverter returns the converter every client and worker of a fleet
// uses: JSON payloads, the large ones by reference in dir. An empty dir
// keeps every value inline (refused above the threshold: see Encode).
func DataConverter(dir string) converter.DataConverter {
	if dir == "" {
		return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), noBlobs{})
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), blobCodec{Blobs{dir}})
}

// noBlobs refuses a payload over the threshold: without --blobs a large
// value would swell the history towards its limits.
type noBlobs struct{}

var errNoBlobs = errors.New("a value over 64 KiB needs a blob directory: start every worker and client with --blobs DIR")

func (noBlobs) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	for _, p := range ps {
		if proto.Size(p) > BlobThreshold {
			return nil, errNoBlobs
		}
	}
	return ps, nil
}

func (noBlobs) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) { return ps, nil }
