package serve

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"smith/source"
	"smith/vm"
)

// This file holds the actions on a run besides resume: stop and retry.
// Each is a POST from this server's own page (Origin) and does what the
// CLI command does, through a function cmd/smithvm injects.

// apiStop is POST /api/runs/ID/stop: `smithvm stop ID` without waiting
// (the page follows the run to its end). 202 when the driver was asked to
// stop, 409 when nothing drives the run.
func (s *Server) apiStop(w http.ResponseWriter, r *http.Request) {
	if !s.actionAllowed(w, r, s.cfg.Stop != nil) {
		return
	}
	id := r.PathValue("id")
	st, err := s.readState(id)
	if err != nil {
		httpError(w, err)
		return
	}
	stopped, err := s.cfg.Stop(id)
	if err != nil {
		jsonError(w, http.StatusInternalServerError, codedMessage(err))
		return
	}
	if !stopped {
		jsonError(w, http.StatusConflict, "run '"+id+"' is not running (status: "+st.Status+"); nothing to stop")
		return
	}
	accepted(w)
}

// apiRetry is POST /api/runs/ID/retry: `smithvm retry ID`, a resume of a
// failed or interrupted run. A halted run waits for a decision (its
// resume form), a completed one has nothing to do.
func (s *Server) apiRetry(w http.ResponseWriter, r *http.Request) {
	if !s.actionAllowed(w, r, s.cfg.Resume != nil) {
		return
	}
	id := r.PathValue("id")
	st, err := s.readState(id)
	if err != nil {
		httpError(w, err)
		return
	}
	switch {
	case st.Status == vm.StatusCompleted:
		jsonError(w, http.StatusConflict, "run '"+id+"' already completed; nothing to retry")
		return
	case st.IsHalted || st.Status == vm.StatusHalted:
		jsonError(w, http.StatusBadRequest, string(source.EUsage)+": run '"+id+"' is halted at '"+st.HaltedBlock+"' awaiting a decision: resume it with a signal")
		return
	}
	if err := s.cfg.Resume(id, "", ""); err != nil {
		resumeRefused(w, err)
		return
	}
	accepted(w)
}

// actionAllowed checks what every action needs: the Origin of this
// server's page and the action turned on. It writes the refusal.
func (s *Server) actionAllowed(w http.ResponseWriter, r *http.Request, on bool) bool {
	if !sameOrigin(r) {
		http.Error(w, "serve: an action must come from this server's own page (Origin)", http.StatusForbidden)
		return false
	}
	if !on {
		http.Error(w, "serve: this action is turned off", http.StatusForbidden)
		return false
	}
	return true
}

// resumeRefused writes a refused resume: 409 for E_RUN_LOCKED, else 400,
// with the code in the message.
func resumeRefused(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	var c source.Coded
	if errors.As(err, &c) && c.ErrCode() == source.ERunLocked {
		status = http.StatusConflict
	}
	jsonError(w, status, codedMessage(err))
}

// codedMessage is err's message, starting with its code when it has one.
func codedMessage(err error) string {
	msg := err.Error()
	var c source.Coded
	if errors.As(err, &c) && !strings.Contains(msg, string(c.ErrCode())) {
		msg = string(c.ErrCode()) + ": " + msg
	}
	return msg
}

// accepted writes 202 {"ok":true}.
func accepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, `{"ok":true}`+"\n")
}
