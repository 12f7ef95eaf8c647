package engine

import (
	"context"
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

// Blobs is a content-addressed store shared by the client and every worker
// (--blobs): a directory, or a bucket of an S3-compatible service
// (blobstore.go). A blob's name is the SHA-256 of its content, so writing
// one again is harmless and reading one checks it.
type Blobs struct {
	store blobStore
	where string // the store, for messages
}

// blobStore is where a Blobs keeps its blobs, by key.
type blobStore interface {
	exists(ctx context.Context, key string) (bool, error)
	put(ctx context.Context, key string, data []byte) error
	get(ctx context.Context, key string) ([]byte, error)
}

// DirBlobs is the store in directory dir (made on the first Put).
func DirBlobs(dir string) *Blobs {
	return &Blobs{store: dirStore(dir), where: dir}
}

// key is where blob ref lives: a directory per two hex digits.
func key(ref string) string { return ref[:2] + "/" + ref }

// Put stores data and returns its hash.
func (b *Blobs) Put(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:])
	ctx := context.Background()
	if ok, err := b.store.exists(ctx, key(ref)); err == nil && ok {
		return ref, nil
	}
	if err := b.store.put(ctx, key(ref), data); err != nil {
		return "", fmt.Errorf("blobs %s: %w", b.where, err)
	}
	return ref, nil
}

// Get returns the blob ref, checking its hash.
func (b *Blobs) Get(ref string) ([]byte, error) {
	if len(ref) != 64 {
		return nil, fmt.Errorf("blobs: bad reference %q", ref)
	}
	data, err := b.store.get(context.Background(), key(ref))
	if err != nil {
		return nil, fmt.Errorf("blobs %s: %w (is --blobs the same store on every host?)", b.where, err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != ref {
		return nil, fmt.Errorf("blobs %s: %s is corrupt", b.where, ref)
	}
	return data, nil
}

// dirStore keeps blobs in a directory.
type dirStore string

func (d dirStore) exists(_ context.Context, key string) (bool, error) {
	_, err := os.Stat(filepath.Join(string(d), filepath.FromSlash(key)))
	return err == nil, nil
}

func (d dirStore) put(_ context.Context, key string, data []byte) error {
	path := filepath.Join(string(d), filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
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
	}
	return werr
}

func (d dirStore) get(_ context.Context, key string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(key)))
}

// blobCodec moves payloads over BlobThreshold into the blob directory.
type blobCodec struct{ blobs *Blobs }

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
// uses: JSON payloads, the large ones by reference in b. A nil b keeps
// every value inline (refused above the threshold: see Encode).
func DataConverter(b *Blobs) converter.DataConverter {
	if b == nil {
		return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), noBlobs{})
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), blobCodec{b})
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
