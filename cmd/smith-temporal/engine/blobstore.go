package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// OpenBlobs opens the blob store spec names (--blobs):
//
//   - a directory: a path, or file:///abs/path;
//   - a bucket of an S3-compatible service:
//     s3://BUCKET[/PREFIX][?region=R][&endpoint=URL][&path_style=false],
//     with the AWS SDK's usual credentials (AWS_ACCESS_KEY_ID and
//     AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role...). endpoint
//     names a service other than AWS (MinIO, Ceph, R2, GCS's S3
//     interface), which is then addressed by path (BUCKET in the path, not
//     the host name) unless path_style=false.
func OpenBlobs(ctx context.Context, spec string) (*Blobs, error) {
	if !strings.Contains(spec, "://") {
		abs, err := filepath.Abs(spec)
		if err != nil {
			return nil, err
		}
		return DirBlobs(abs), nil
	}
	u, err := url.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("--blobs %q: %w", spec, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" || !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("--blobs %q: want file:///ABSOLUTE/PATH", spec)
		}
		return DirBlobs(filepath.Clean(u.Path)), nil
	case "s3":
		return openS3(ctx, u)
	}
	return nil, fmt.Errorf("--blobs %q: want a directory, file:///PATH or s3://BUCKET/PREFIX", spec)
}

// s3Store keeps blobs in a bucket, under a prefix.
type s3Store struct {
	c              *s3.Client
	bucket, prefix string
}

func openS3(ctx context.Context, u *url.URL) (*Blobs, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("--blobs %q: want s3://BUCKET/PREFIX", u.Redacted())
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "region", "endpoint", "path_style":
		default:
			return nil, fmt.Errorf("--blobs %q: unknown parameter %q (want region, endpoint, path_style)", u.Redacted(), k)
		}
	}
	var opts []func(*config.LoadOptions) error
	if r := q.Get("region"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--blobs %q: AWS configuration: %w", u.Redacted(), err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpoint := q.Get("endpoint")
	pathStyle := endpoint != "" && q.Get("path_style") != "false"
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
		// S3-compatible services do not all know the newer checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	where := "s3://" + u.Host + "/" + prefix
	return &Blobs{store: &s3Store{c: c, bucket: u.Host, prefix: prefix}, where: where}, nil
}

func (s *s3Store) exists(ctx context.Context, key string) (bool, error) {
	_, err := s.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if err == nil {
		return true, nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchKey") {
		return false, nil
	}
	return false, err
}

func (s *s3Store) put(ctx context.Context, key string, data []byte) error {
	_, err := s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
	return err
}

func (s *s3Store) get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}
