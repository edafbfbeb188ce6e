package apiserver

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The back-off of what waits for an API server that does not answer: the
// access check started without an answer, and the Node's registration
// (upstream's registerWithAPIServer waits likewise, doubling to 7s).
var untilAnswered = Retry{Attempts: math.MaxInt, Base: 800 * time.Millisecond, Max: 7 * time.Second}

// NotAnswering reports whether err means that the API server did not
// answer: the connection failed (refused, reset, a name that does not
// resolve, a TLS handshake, a timeout, a deadline of the caller's), or the
// server, or a proxy before it, said it could not serve the request now
// (5xx, 429). Any other answer is one: a 401 or 403, ErrAccessDenied, a
// 404 or an invalid request say what the server will go on saying. A
// context cancelled is not an error of the server's.
func NotAnswering(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrAccessDenied) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	code := st.Status().Code
	return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}

// serverOf names the API server client talks to, its URL, for the logs;
// "the API server" when the client has no REST client of its own (a fake).
func serverOf(client kubernetes.Interface) string {
	if rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil {
		if u := rc.Get().URL(); u != nil {
			u.Path, u.RawQuery = "", ""
			return u.String()
		}
	}
	return "the API server"
}
