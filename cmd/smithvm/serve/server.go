package serve

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"smith/compiler"
	"smith/isa"
	"smith/source"
	"smith/vm/store"
	"smith/workers/confine"
)

//go:embed assets
var assets embed.FS

// DefaultAddr is where serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8377"

// TokenCookie is the cookie that /?token=T sets.
const TokenCookie = "smith_token"

// A Config says what a Server serves. Store and Dirs are required.
type Config struct {
	// Store is the run store of BASE; Dirs its layout.
	Store *store.Store
	Dirs  confine.Dir
	// Token, when not "", is required on every request: an Authorization
	// bearer header, or the cookie set by /?token=T.
	Token string
	// Resume resumes run id as `smithvm resume ID --signal S --note N`
	// does: it returns once the run's lock is taken (or with the error,
	// E_RUN_LOCKED among them) and continues the run in the background.
	// Nil turns the resume form off.
	Resume func(id, signal, note string) error
	// Diff returns a step's commit (`git show`) or, for commit "", run
	// id's whole diff against its starting commit, through Smith's git.
	// Nil turns the diff links off.
	Diff func(ctx context.Context, id, commit string) (string, error)
	// Stop asks the process driving run id to stop it, as `smithvm stop
	// ID` does, without waiting; stopped is false when nothing drives the
	// run. Nil turns the stop button off.
	Stop func(id string) (stopped bool, err error)
	// Env looks up environment variables: the values of a program's
	// secrets, masked in everything served. Nil means none.
	Env func(string) (string, bool)
	// Masked are values masked in everything served besides the
	// programs' secrets: the presets' own variables as the server's
	// environment has them (CONTRACT 5, masked like secrets everywhere).
	Masked []string
	// Poll is how often an events stream looks for new lines (default
	// 50 ms).
	Poll time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// A Server is the viewer's http.Handler.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	pages *template.Template

	mu    sync.Mutex
	progs map[string]cachedProg // by workflow path and context keys
}

// cachedProg is a compiled workflow and the file version it came from.
type cachedProg struct {
	mod  time.Time
	size int64
	prog *isa.Program
}

// New returns the Server of cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("serve: no run store")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("serve: templates: %w", err)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), pages: pages, progs: map[string]cachedProg{}}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.listPage)
	s.mux.HandleFunc("GET /runs/{id}", s.runPage)
	s.mux.HandleFunc("GET /api/runs", s.apiRuns)
	s.mux.HandleFunc("GET /api/runs/{id}", s.apiRun)
	s.mux.HandleFunc("GET /api/runs/{id}/graph", s.apiGraph)
	s.mux.HandleFunc("GET /api/runs/{id}/view", s.apiView)
	s.mux.HandleFunc("GET /api/runs/{id}/events", s.apiEvents)
	s.mux.HandleFunc("GET /api/runs/{id}/steps/{step}/stdout", s.apiStdout)
	s.mux.HandleFunc("GET /api/runs/{id}/steps/{step}/stderr", s.apiStderr)
	s.mux.HandleFunc("GET /api/runs/{id}/steps/{step}/files/{path...}", s.apiStepFile)
	s.mux.HandleFunc("POST /api/runs/{id}/resume", s.apiResume)
	s.mux.HandleFunc("GET /api/runs/{id}/live", s.apiLive)
	s.mux.HandleFunc("GET /api/runs/{id}/diff", s.apiRunDiff)
	s.mux.HandleFunc("GET /api/runs/{id}/steps/{step}/diff", s.apiStepDiff)
	s.mux.HandleFunc("POST /api/runs/{id}/stop", s.apiStop)
	s.mux.HandleFunc("POST /api/runs/{id}/retry", s.apiRetry)
	return s, nil
}

// ServeHTTP checks the host and the token, then serves the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	// Everything comes from this server; Graphviz compiles its
	// WebAssembly from bytes embedded in viz-global.js.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
	if s.cfg.Token == "" && !loopbackHost(r.Host) {
		// Without a token only loopback is served: a page on another site
		// that points a name at 127.0.0.1 (DNS rebinding) gets nothing.
		http.Error(w, "serve: the Host header must name a loopback address", http.StatusForbidden)
		return
	}
	if s.cfg.Token != "" {
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
			if !s.tokenOK(t) {
				http.Error(w, "serve: wrong token", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="smithvm serve"`)
			http.Error(w, "serve: a token is needed (Authorization: Bearer T, or open /?token=T once)", http.StatusUnauthorized)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// tokenOK compares t with the token in constant time.
func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.cfg.Token)) == 1
}

// authorized reports whether r carries the token.
func (s *Server) authorized(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		// The scheme is case-insensitive (RFC 9110, 11.1).
		if scheme, t, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") && s.tokenOK(strings.TrimSpace(t)) {
			return true
		}
	}
	if c, err := r.Cookie(TokenCookie); err == nil && s.tokenOK(c.Value) {
		return true
	}
	return false
}

// sameOrigin reports whether a POST comes from a page of this server: its
// Origin header names the host the request was sent to.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return u.Host == r.Host
}

// loopbackHost reports whether host (a Host header, maybe with a port)
// names the loopback interface.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// An AddrError is an address serve refuses to listen on.
type AddrError struct{ Addr string }

// Error says why, with the code.
func (e *AddrError) Error() string {
	return fmt.Sprintf("--addr %s is not a loopback address: anyone who can reach it could read every run and resume halted ones; give --token T (or set SMITH_SERVE_TOKEN)", e.Addr)
}

// ErrCode returns E_SERVE_NO_TOKEN.
func (e *AddrError) ErrCode() source.Code { return source.EServeNoToken }

// CheckAddr checks that addr (host:port) may be served with token: a
// loopback host always, any other only with a token. An empty host
// (":8377") listens on every interface.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	if token != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &AddrError{Addr: addr}
}

// Serve serves s on l until ctx is done, then shuts down (open event
// streams end with ctx).
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	return err
}

// program compiles (or reuses) the workflow at path; nil when it cannot
// be compiled any more (moved, broken): the pages then show what the
// state alone says.
func (s *Server) program(path string, ctxKeys []string) *isa.Program {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	key := path + "\x00" + strings.Join(ctxKeys, "\x00")
	s.mu.Lock()
	c, ok := s.progs[key]
	s.mu.Unlock()
	if ok && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() {
		return c.prog
	}
	p, _ := compiler.LoadProgram(path, compiler.Options{ContextKeys: ctxKeys})
	s.mu.Lock()
	s.progs[key] = cachedProg{mod: fi.ModTime(), size: fi.Size(), prog: p}
	s.mu.Unlock()
	return p
}
