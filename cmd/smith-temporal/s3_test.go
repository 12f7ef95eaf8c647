package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// s3Server starts an S3-compatible server (gofakes3, in memory) on
// 127.0.0.1 with the bucket "smith", and gives the AWS SDK of this
// process and of the fleet's workers credentials for it. It returns the
// server's endpoint and its backend.
func s3Server(t *testing.T, f *fleet) (string, *s3mem.Backend) {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("smith"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	creds := []string{"AWS_ACCESS_KEY_ID=smith", "AWS_SECRET_ACCESS_KEY=smith-secret", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
	for _, kv := range creds {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	f.env = append(f.env, creds...)
	return srv.URL, be
}

// s3Objects lists the keys under prefix in bucket smith.
func s3Objects(t *testing.T, be *s3mem.Backend, prefix string) []string {
	t.Helper()
	p := gofakes3.NewPrefix(&prefix, nil)
	list, err := be.ListBucket("smith", &p, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestS3Blobs: with --blobs s3://smith/fleet?endpoint=... (a real
// S3-compatible server on 127.0.0.1), the program and an output over
// 64 KiB travel through the bucket: the run completes with the whole
// value, the bucket holds them under the prefix, and no blob directory
// is made on the disk.
func TestS3Blobs(t *testing.T) {
	f := newFleet(t)
	endpoint, be := s3Server(t, f)
	local := f.blobs
	f.blobs = "s3://smith/fleet?endpoint=" + endpoint + "&region=us-east-1"
	f.worker()
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB
	write(t, filepath.Join(f.base, "workspace", "big.txt"), big)
	file := write(t, filepath.Join(f.base, "big.yaml"), testWorkflow("s3_blobs.yaml"))
	r := f.cli("run", file, "--run-id", "s3big", "--json")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	if got := parseState(t, r.stdout).Steps["Cat"].Lines; len(got) != 1 || len(got[0]) != len(big) {
		t.Errorf("Cat lines: %d lines, want the whole 128 KiB line", len(got))
	}
	keys := s3Objects(t, be, "fleet/")
	if len(keys) < 2 {
		t.Errorf("bucket objects under fleet/: %q, want the program and the large output at least", keys)
	}
	for _, k := range keys {
		if parts := strings.Split(k, "/"); len(parts) != 3 || len(parts[2]) != 64 || parts[1] != parts[2][:2] {
			t.Errorf("object %q, want fleet/HH/SHA256", k)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(local, "*")); len(m) > 0 {
		t.Errorf("blobs written to the disk: %q", m)
	}
	if r := f.cli("status", "s3big"); r.code != 0 || !strings.Contains(r.stdout, "completed") {
		t.Errorf("status through the bucket: %d %q %s", r.code, r.stdout, r.stderr)
	}
}
