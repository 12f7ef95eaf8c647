package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/server/common/authorization"
)

// testAPIKey is the one API key the test server accepts; a request with
// another is refused, one with none passes (the other tests').
const testAPIKey = "smith-test-key"

// keysSeen counts the requests that carried testAPIKey.
var keysSeen atomic.Int64

// apiKeys is the test server's claim mapper.
type apiKeys struct{}

func (apiKeys) GetClaims(a *authorization.AuthInfo) (*authorization.Claims, error) {
	switch a.AuthToken {
	case "":
	case "Bearer " + testAPIKey:
		keysSeen.Add(1)
	default:
		return nil, errors.New("unknown API key")
	}
	return &authorization.Claims{System: authorization.RoleAdmin}, nil
}

// pki writes a CA, a server certificate for the name temporal.test only
// and a client certificate, all signed by the CA, into dir.
func pki(t *testing.T, dir string) (ca, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	save := func(name, typ string, der []byte) string {
		return write(t, filepath.Join(dir, name), string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})))
	}
	saveKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return save(name, "EC PRIVATE KEY", der)
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smith test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string) ([]byte, *ecdsa.PrivateKey) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
			KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	sDER, sKey := leaf(2, "temporal.test", x509.ExtKeyUsageServerAuth, []string{"temporal.test"})
	cDER, cKey := leaf(3, "smith worker", x509.ExtKeyUsageClientAuth, nil)
	return save("ca.pem", "CERTIFICATE", caDER), save("server.pem", "CERTIFICATE", sDER), saveKey("server.key", sKey),
		save("client.pem", "CERTIFICATE", cDER), saveKey("client.key", cKey)
}

// tlsFront serves TLS on 127.0.0.1, requiring a client certificate
// signed by ca, and relays each connection to the plain frontend backend:
// the test server as a cluster with mTLS sees it.
func tlsFront(t *testing.T, backend, ca, cert, key string) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(readFile(t, ca)))
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err != nil {
					return
				}
				b, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer b.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(b, c); done <- struct{}{} }()
				go func() { io.Copy(c, b); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return l.Addr().String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTLSAndAPIKey: a cluster behind mTLS (a private CA, a server
// certificate for another name than the address, a client certificate
// required) and an API key: a worker configured by the environment
// variables and the commands by flags run a workflow; the key reaches the
// server; a missing client certificate, server name or a wrong key is
// refused.
func TestTLSAndAPIKey(t *testing.T) {
	s := server(t)
	ca, sc, sk, cc, ck := pki(t, t.TempDir())
	addr := tlsFront(t, s.GetFrontendHostPort(), ca, sc, sk)
	f := newFleetAt(t, addr, s.GetDefaultNamespace())
	f.env = []string{"SMITH_TEMPORAL_TLS_CERT=" + cc, "SMITH_TEMPORAL_TLS_KEY=" + ck, "SMITH_TEMPORAL_TLS_CA=" + ca,
		"SMITH_TEMPORAL_TLS_SERVER_NAME=temporal.test", "SMITH_TEMPORAL_API_KEY=" + testAPIKey}
	f.worker()
	secure := []string{"--tls-cert", cc, "--tls-key", ck, "--tls-ca", ca, "--tls-server-name", "temporal.test", "--api-key", testAPIKey}
	file := write(t, filepath.Join(f.base, "loops.yaml"), loopsYAML)
	before := keysSeen.Load()
	f.extra = secure
	if r := f.cli("run", file, "--run-id", "tls1"); r.code != 0 {
		t.Fatalf("run over mTLS with an API key: exit %d: %s", r.code, r.stderr)
	}
	if n := keysSeen.Load() - before; n < 10 {
		t.Errorf("%d requests carried the API key, want every request of the client and the worker", n)
	}
	for _, tt := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"no client certificate", []string{"--tls-ca", ca, "--tls-server-name", "temporal.test"}, ""},
		{"no server name", []string{"--tls-cert", cc, "--tls-key", ck, "--tls-ca", ca}, "x509"},
		{"a wrong API key", []string{"--tls-cert", cc, "--tls-key", ck, "--tls-ca", ca, "--tls-server-name", "temporal.test", "--api-key", "nope"}, ""},
		{"a certificate without its key", []string{"--tls-cert", cc}, "--tls-key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f.extra = tt.flags
			r := f.cli("status", "tls1")
			if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("status with %s: exit %d, stdout %q, stderr %q; want refused", tt.name, r.code, r.stdout, r.stderr)
			}
		})
	}
}
