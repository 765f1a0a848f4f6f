package fakegithub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// actionsApp is the slug of GitHub Actions, the default app of a check
// run: its check runs are the jobs of workflow runs, with the same IDs.
const actionsApp = "github-actions"

// logsPath is where the fake serves the Actions job logs that
// GET /repos/{o}/{r}/actions/jobs/{id}/logs redirects to, as GitHub
// redirects to a storage host; it is outside the API and needs no token.
const logsPath = "/_logs/"

const docsChecks = "https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference"

// CheckRun is a check run of a commit, as SetCheckRun and a scripted CI
// (SetCI) give it.
type CheckRun struct {
	// Name identifies the run among the commit's.
	Name string
	// Status is "queued", "in_progress" or "completed".
	Status string
	// Conclusion is that of a completed run: "success", "failure",
	// "neutral", "cancelled", "skipped", "timed_out" or "action_required";
	// "" before.
	Conclusion string
	// Title, Summary and Text are the run's output.
	Title, Summary, Text string
	// App is the slug of the app that made the run; default
	// "github-actions", whose runs are Actions jobs with the run's ID.
	App string
	// Log is the Actions job's log, which the job's logs endpoint
	// redirects to. A run without Log and OpenLog has no log (404).
	Log []byte
	// OpenLog, when set, is the log instead of Log: it is called for each
	// download and what it reads is streamed (and closed after, if it is
	// an io.Closer), so that a large log is never held in memory.
	OpenLog func() io.Reader
}

var (
	runStatuses    = []string{"queued", "in_progress", "completed"}
	runConclusions = []string{"success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required"}
	// failedConclusions are those of a completed run that fails a check.
	failedConclusions = []string{"failure", "cancelled", "timed_out", "action_required"}
	statusStates      = []string{"pending", "success", "failure", "error"}
)

type checkRun struct {
	id                 int64
	sha                string
	run                CheckRun
	started, completed time.Time
}

type status struct {
	id                          int64
	context, state, description string
	created                     time.Time
}

// SetCheckRun creates the check run run on commit sha, or replaces the one
// of the same name (keeping its ID, as an update of the run on GitHub
// would), and returns its ID. It panics if run's Name is empty, its Status
// or its Conclusion is not one GitHub has, or a completed run has no
// Conclusion.
func (s *Server) SetCheckRun(sha string, run CheckRun) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setCheckRun(sha, run)
}

func (s *Server) setCheckRun(sha string, run CheckRun) int64 {
	switch {
	case run.Name == "":
		panic("fakegithub: a check run needs a name")
	case !slices.Contains(runStatuses, run.Status):
		panic(fmt.Sprintf("fakegithub: check run %q: unknown status %q", run.Name, run.Status))
	case run.Status == "completed" && !slices.Contains(runConclusions, run.Conclusion):
		panic(fmt.Sprintf("fakegithub: completed check run %q: unknown conclusion %q", run.Name, run.Conclusion))
	case run.Status != "completed" && run.Conclusion != "":
		panic(fmt.Sprintf("fakegithub: check run %q is %s but has conclusion %q", run.Name, run.Status, run.Conclusion))
	}
	if run.App == "" {
		run.App = actionsApp
	}
	now := s.now()
	i := slices.IndexFunc(s.runs[sha], func(cr *checkRun) bool { return cr.run.Name == run.Name })
	var cr *checkRun
	if i >= 0 {
		cr = s.runs[sha][i]
	} else {
		cr = &checkRun{id: s.newID(), sha: sha, started: now}
		s.runs[sha] = append(s.runs[sha], cr)
		s.runsByID[cr.id] = cr
	}
	cr.run = run
	switch {
	case run.Status != "completed":
		cr.completed = time.Time{}
	case cr.completed.IsZero():
		cr.completed = now
	}
	return cr.id
}

// SetStatus sets the commit status of context on commit sha: state is
// "pending", "success", "failure" or "error". Each call adds a status, as
// on GitHub; the combined status shows the latest of each context. It
// panics on any other state.
func (s *Server) SetStatus(sha, context, state, description string) {
	if !slices.Contains(statusStates, state) {
		panic(fmt.Sprintf("fakegithub: unknown commit status state %q", state))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[sha] = append(s.statuses[sha], &status{
		id: s.newID(), context: context, state: state, description: description, created: s.now(),
	})
}

// SetCI scripts the repository's CI: ci is called once per commit, the
// first time a request needs the commit's checks (its check runs, its
// combined status, or the mergeable_state of a pull request whose head it
// is), and the runs it returns are stored as if set with SetCheckRun. The
// request waits for ci, which runs without the server's lock, so that it
// may call the server (FileAt to read the commit, SetCheckRun to finish a
// run later). Commits whose CI ran are not run again by a new ci; nil
// stops the scripted CI.
func (s *Server) SetCI(ci func(sha string) []CheckRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ci = ci
}

// runCI runs the scripted CI for commit sha unless it ran: called with
// s.mu held, it releases it while the CI runs. A request for a commit
// whose CI runs waits for it.
func (s *Server) runCI(sha string) {
	if done, ok := s.ciRan[sha]; ok {
		select {
		case <-done:
		default:
			s.mu.Unlock()
			<-done
			s.mu.Lock()
		}
		return
	}
	if s.ci == nil {
		return
	}
	ci, done := s.ci, make(chan struct{})
	s.ciRan[sha] = done
	defer close(done)
	runs := func() []CheckRun {
		s.mu.Unlock()
		defer s.mu.Lock()
		return ci(sha)
	}()
	for _, run := range runs {
		s.setCheckRun(sha, run)
	}
}

// latestStatuses are the statuses of commit sha, the latest of each
// context, in the order the contexts first appeared.
func (s *Server) latestStatuses(sha string) []*status {
	var out []*status
	for _, st := range s.statuses[sha] {
		if i := slices.IndexFunc(out, func(o *status) bool { return o.context == st.context }); i >= 0 {
			out[i] = st
		} else {
			out = append(out, st)
		}
	}
	return out
}

// combinedState is GitHub's combined state of statuses: failure if one
// failed or erred, else pending if one is pending or there is none, else
// success.
func combinedState(statuses []*status) string {
	state := "success"
	if len(statuses) == 0 {
		state = "pending"
	}
	for _, st := range statuses {
		switch st.state {
		case "failure", "error":
			return "failure"
		case "pending":
			state = "pending"
		}
	}
	return state
}

// checksState sums up the checks of commit sha, its check runs and the
// latest status of each context (after its scripted CI ran): "failure" if
// one failed, else "pending" if one has not finished (or if there is none
// and checks are required), else "success".
func (s *Server) checksState(sha string) string {
	s.runCI(sha)
	runs, statuses := s.runs[sha], s.latestStatuses(sha)
	state := "success"
	if len(runs) == 0 && len(statuses) == 0 && s.requireChecks {
		state = "pending"
	}
	for _, cr := range runs {
		switch {
		case cr.run.Status != "completed":
			state = "pending"
		case slices.Contains(failedConclusions, cr.run.Conclusion):
			return "failure"
		}
	}
	if len(statuses) == 0 {
		return state
	}
	switch combinedState(statuses) {
	case "failure":
		return "failure"
	case "pending":
		return "pending"
	}
	return state
}

// refCommit is the commit of the call's {ref}, or the answer to a ref
// that names none.
func (s *Server) refCommit(c *call) (string, *reply) {
	if sha, ok := s.resolveRef(c.ref); ok {
		return sha, nil
	}
	return "", errorReply(http.StatusUnprocessableEntity, "No commit found for SHA: "+c.ref, docsChecks)
}

// listCheckRuns is GET /repos/{o}/{r}/commits/{ref}/check-runs: check_name,
// status and pagination. There is one run per name, so filter=latest and
// filter=all list the same.
func (s *Server) listCheckRuns(c *call) *reply {
	sha, rep := s.refCommit(c)
	if rep != nil {
		return rep
	}
	q := c.r.URL.Query()
	if st := q.Get("status"); st != "" && !slices.Contains(runStatuses, st) {
		return invalid("CheckRun", "status")
	}
	s.runCI(sha)
	pulls := s.pullsAt(sha)
	list := []any{}
	for _, cr := range s.runs[sha] {
		if name := q.Get("check_name"); name != "" && cr.run.Name != name {
			continue
		}
		if st := q.Get("status"); st != "" && cr.run.Status != st {
			continue
		}
		list = append(list, s.checkRunJSON(cr, pulls))
	}
	items, header := s.page(c.r, list)
	rep = jsonReply(http.StatusOK, map[string]any{"total_count": len(list), "check_runs": items})
	rep.header = header
	return rep
}

// getCheckRun is GET /repos/{o}/{r}/check-runs/{id}.
func (s *Server) getCheckRun(c *call) *reply {
	cr := s.runsByID[c.id]
	if cr == nil {
		return notFound()
	}
	return jsonReply(http.StatusOK, s.checkRunJSON(cr, s.pullsAt(cr.sha)))
}

// getCombinedStatus is GET /repos/{o}/{r}/commits/{ref}/status: the latest
// status of each context, paginated, with their combined state.
func (s *Server) getCombinedStatus(c *call) *reply {
	sha, rep := s.refCommit(c)
	if rep != nil {
		return rep
	}
	s.runCI(sha)
	latest := s.latestStatuses(sha)
	list := make([]any, 0, len(latest))
	for _, st := range latest {
		list = append(list, s.statusJSON(sha, st))
	}
	items, header := s.page(c.r, list)
	rep = jsonReply(http.StatusOK, map[string]any{
		"state":       combinedState(latest),
		"statuses":    items,
		"sha":         sha,
		"total_count": len(list),
		"repository":  s.repoJSON(false),
		"commit_url":  s.apiURL("commits/%s", sha),
		"url":         s.apiURL("commits/%s/status", sha),
	})
	rep.header = header
	return rep
}

// getJobLogs is GET /repos/{o}/{r}/actions/jobs/{id}/logs: a redirect to
// the log of the Actions job of check run id, on the fake's download path,
// as GitHub redirects to a short-lived URL of its storage.
func (s *Server) getJobLogs(c *call) *reply {
	cr := s.runsByID[c.id]
	if cr == nil || cr.run.App != actionsApp || (cr.run.Log == nil && cr.run.OpenLog == nil) {
		return notFound()
	}
	return &reply{status: http.StatusFound, header: map[string]string{
		"Location": fmt.Sprintf("%s%s%d?token=%s", s.srv.URL, logsPath, cr.id, s.logToken(cr.id)),
	}}
}

// logToken signs the download URL of the log of job id.
func (s *Server) logToken(id int64) string { return sha(fmt.Sprintf("%s:log:%d", s.token, id)) }

// serveLog serves the download of a job's log (see getJobLogs), streaming
// it: Fail rules apply to it and it is in Requests, but it is neither
// authenticated (its URL is signed) nor rate limited nor held (see Hold),
// as it is not the API.
func (s *Server) serveLog(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	id, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, logsPath), 10, 64)
	cr := s.runsByID[id]
	var rep *reply
	var log CheckRun
	switch f := s.takeFailure(r); {
	case f != nil:
		rep = f.reply()
	case r.Method != http.MethodGet:
		rep = &reply{status: http.StatusMethodNotAllowed}
	case err != nil || cr == nil || (cr.run.Log == nil && cr.run.OpenLog == nil):
		rep = &reply{status: http.StatusNotFound, body: "The specified blob does not exist."}
	case r.URL.Query().Get("token") != s.logToken(id):
		rep = &reply{status: http.StatusForbidden, body: "Server failed to authenticate the request."}
	default:
		rep = &reply{status: http.StatusOK}
		log = cr.run
	}
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rep.status, Time: time.Now(),
	})
	s.mu.Unlock()

	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status != http.StatusOK {
		writeRaw(w, rep)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if log.OpenLog == nil {
		w.Header().Set("Content-Length", strconv.Itoa(len(log.Log)))
		_, _ = w.Write(log.Log)
		return
	}
	rd := log.OpenLog()
	if cl, ok := rd.(io.Closer); ok {
		defer cl.Close()
	}
	_, _ = io.Copy(w, rd)
}

// writeRaw writes rep: a string body as text, any other as JSON.
func writeRaw(w http.ResponseWriter, rep *reply) {
	var out []byte
	switch b := rep.body.(type) {
	case nil:
	case string:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		out = []byte(b)
	default:
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		out, _ = json.Marshal(b)
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(out)
}
