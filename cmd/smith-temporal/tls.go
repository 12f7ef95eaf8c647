package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"smith/source"
)

// tlsFlags are the connection's security for production clusters
// (CONTRACT 14): mTLS with a client certificate and a private CA, and
// Temporal Cloud's API keys. Each flag may come from its environment
// variable instead (tlsEnv), so that a key stays out of argv.
type tlsFlags struct {
	cert, key, ca, serverName, apiKey string
}

// tlsEnv names the environment variable of each flag.
var tlsEnv = []struct{ flag, env string }{
	{"tls-cert", "SMITH_TEMPORAL_TLS_CERT"},
	{"tls-key", "SMITH_TEMPORAL_TLS_KEY"},
	{"tls-ca", "SMITH_TEMPORAL_TLS_CA"},
	{"tls-server-name", "SMITH_TEMPORAL_TLS_SERVER_NAME"},
	{"api-key", "SMITH_TEMPORAL_API_KEY"},
}

func (t *tlsFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&t.cert, "tls-cert", "", "the client certificate (PEM) for mTLS; turns TLS on ($SMITH_TEMPORAL_TLS_CERT)")
	fs.StringVar(&t.key, "tls-key", "", "the private key (PEM) of --tls-cert ($SMITH_TEMPORAL_TLS_KEY)")
	fs.StringVar(&t.ca, "tls-ca", "", "the CA certificates (PEM) that sign the server's certificate (default: the system's); turns TLS on ($SMITH_TEMPORAL_TLS_CA)")
	fs.StringVar(&t.serverName, "tls-server-name", "", "the name the server's certificate must carry (default: the host of --address); turns TLS on ($SMITH_TEMPORAL_TLS_SERVER_NAME)")
	fs.StringVar(&t.apiKey, "api-key", "", "an API key sent with every request (Temporal Cloud); turns TLS on ($SMITH_TEMPORAL_API_KEY)")
}

// resolve fills each flag not given from its environment variable.
func (t *tlsFlags) resolve(getenv func(string) string) error {
	vals := []*string{&t.cert, &t.key, &t.ca, &t.serverName, &t.apiKey}
	for i, e := range tlsEnv {
		if *vals[i] == "" {
			*vals[i] = getenv(e.env)
		}
	}
	if (t.cert == "") != (t.key == "") {
		return source.Errorf(source.EUsage, "--tls-cert and --tls-key go together (or SMITH_TEMPORAL_TLS_CERT and SMITH_TEMPORAL_TLS_KEY)")
	}
	return nil
}

// on says whether the connection uses TLS.
func (t *tlsFlags) on() bool {
	return t.cert != "" || t.ca != "" || t.serverName != "" || t.apiKey != ""
}

// apply sets the connection options of opts.
func (t *tlsFlags) apply(opts *client.Options) error {
	if !t.on() {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.serverName}
	if t.cert != "" {
		pair, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return &source.Error{Code: source.EUsage, Msg: "--tls-cert/--tls-key", Err: err}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if t.ca != "" {
		pem, err := os.ReadFile(t.ca)
		if err != nil {
			return &source.Error{Code: source.EUsage, Msg: "--tls-ca", Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return source.Errorf(source.EUsage, "--tls-ca: no PEM certificate in %s", t.ca)
		}
		cfg.RootCAs = pool
	}
	opts.ConnectionOptions.TLS = cfg
	if t.apiKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(t.apiKey)
	}
	return nil
}
