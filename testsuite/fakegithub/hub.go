package fakegithub

import (
	"net/http"
	"net/http/httptest"
	"strings"
)

// Hub serves the API of several fake repositories at one URL, as GitHub
// serves every repository: /repos/{owner}/{repo}/… goes to that
// repository's Server, everything else (the authenticated user, …) to
// the first. A repository no Server holds gets 404 Not Found.
type Hub struct {
	srv   *httptest.Server
	repos []*Server
}

// NewHub serves repos, which share their token and bot login.
func NewHub(repos ...*Server) *Hub {
	h := &Hub{repos: repos}
	h.srv = httptest.NewServer(h)
	return h
}

// URL is the base URL of the API, with a trailing slash.
func (h *Hub) URL() string { return h.srv.URL + "/" }

// Close shuts the hub down (not its Servers).
func (h *Hub) Close() { h.srv.Close() }

func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) < 3 || parts[0] != "repos" {
		h.repos[0].ServeHTTP(w, r)
		return
	}
	for _, s := range h.repos {
		if strings.EqualFold(parts[1], s.owner) && strings.EqualFold(parts[2], s.name) {
			s.ServeHTTP(w, r)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`))
}
